"""VLMEvalKit's MathVista rule, verbatim.

Source (github.com/open-compass/VLMEvalKit, Apache-2.0; copied for testing only):
``vlmeval/dataset/utils/mathvista.py``: ``list_to_dict``, ``post_check``, at commit
c026693a1cdac9292447eb480579dc2e11fb6f1c (2025-08-04; the rule the May-2025 papers ran);
identical at e8e78f05f3080fe28154f2130321f17951c3be94 but for its imports. ``post_check``
takes the ``can_infer`` to use, which the original imports from ``vlmeval/utils/
matching_util.py`` (ported in ``vlmevalkit_c026693a_matching`` / ``vlmevalkit_e8e78f05_matching``).
"""

# ruff: noqa
# fmt: off
from reference.vlmevalkit_c026693a_matching import can_infer


# ---- vlmeval/dataset/utils/mathvista.py @ c026693a (= e8e78f05) --------------------------
def list_to_dict(lst):
    return {chr(65 + i): val for i, val in enumerate(lst)}


def post_check(line, prefetch=False, can_infer=can_infer):
    res = None
    ans = line['answer']
    response = line['prediction'] if prefetch else line['res']
    try:
        if line['question_type'] == 'multi_choice':
            ans = line['answer_option']
            choices = list_to_dict(eval(line['choices']))
            res = can_infer(response, choices)
            if prefetch:
                return res
        else:
            if line['answer_type'] == 'integer':
                res = int(response)
                ans = int(line['answer'])
            elif line['answer_type'] == 'float':
                res = float(response)
                ans = float(line['answer'])
            else:
                res = str(res)
                ans = str(ans)
    except ValueError:
        pass

    if res == ans:
        return res if prefetch else True
    else:
        return False
