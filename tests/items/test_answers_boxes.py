"""IoU on the boxes no shipped data has: apart, thinner than a pixel, of no area at all."""

from __future__ import annotations

import pytest

from vlrl.items.answers import box_iou


@pytest.mark.parametrize(
    ("a", "b", "iou"),
    [
        ([0, 0, 10, 10], [20, 0, 30, 10], 0.0),  # apart in x
        ([0, 0, 10, 10], [0, 20, 10, 30], 0.0),  # apart in y
        ([0, 0, 0.5, 10], [0, 0, 10, 10], 5 / 100),  # half a pixel wide, inside the other
        ([0, 0, 10, 0.5], [0, 0, 10, 10], 5 / 100),  # half a pixel high
        ([0, 0, 10, 10], [0, 0, 0.5, 10], 5 / 100),
        ([0, 0, 10, 10], [0, 0, 10, 0.5], 5 / 100),
        ([0, 0, 0.5, 1], [0, 0, 0.5, 1], 1.0),  # a union under one square pixel
        ([0, 0, 0, 0], [0, 0, 0, 0], 0.0),  # no area at all: no division by zero
        ([5, 5, 5, 9], [5, 5, 5, 9], 0.0),
    ],
)
def test_box_iou_on_thin_apart_and_empty_boxes(a, b, iou: float) -> None:
    assert box_iou(a, b) == pytest.approx(iou, abs=0)


def test_accuracy_of_a_response_without_an_answer_and_of_a_choice() -> None:
    from vlrl.items.answers import answer_accuracy

    assert answer_accuracy("no tags at all", "B", "multiple_choice") == 0.0
    assert answer_accuracy("<answer>(B) red</answer>", "B", "multiple_choice") == 1.0
    assert answer_accuracy("<answer>C</answer>", "B", "multiple_choice") == 0.0


def test_accuracy_of_yes_no_and_of_a_number_at_the_tolerance() -> None:
    from vlrl.items.answers import answer_accuracy

    assert answer_accuracy("<answer> Yes. </answer>", "yes", "yes_no") == 1.0
    assert answer_accuracy("<answer>no</answer>", "yes", "yes_no") == 0.0
    assert answer_accuracy("<answer>0.000001</answer>", "0", "numerical") == 0.0  # 1e-6 apart
    assert answer_accuracy("<answer>0.0000001</answer>", "0", "numerical") == 1.0


def test_accuracy_of_an_empty_free_form_answer_and_of_a_type_without_a_rule() -> None:
    from vlrl.items.answers import answer_accuracy

    assert answer_accuracy("<answer> . </answer>", "blue", "free_form") == 0.0
    assert answer_accuracy("<answer>Blue.</answer>", "blue", "free_form") == 1.0
    with pytest.raises(ValueError, match=r"^no accuracy rule for problem_type 'detection'$"):
        answer_accuracy("<answer>x</answer>", "x", "detection")


def test_a_box_is_written_as_rounded_integers_the_way_targets_write_it():
    from vlrl.items.answers import dumps_box

    assert dumps_box([1.0, 2.4, 30.6, 40.5]) == "[1, 2, 31, 40]"  # round half to even
    assert dumps_box([]) == "[]"
