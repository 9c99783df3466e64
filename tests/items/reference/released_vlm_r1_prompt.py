"""VLM-R1's prompt as its GRPO trainer builds it, verbatim: the oracle of
``tests/items/test_prompts_released.py``.

Source: om-ai-lab/VLM-R1 @ 90052f4 (Apache-2.0), ``src/open-r1-multimodal/src/open_r1/``:
``vlm_modules/qwen_module.py`` ``Qwen2VLModule.get_question_template`` (lines 69-85, unchanged,
as a method of the shim class), and from ``grpo_jsonl.py`` line 979 (the problem: the human turn
with ``<image>`` removed) and ``make_conversation_from_jsonl``'s image branch (lines 1004-1010,
the prompt), in :func:`released_prompt`: shim, the row's fields it reads are its arguments
(``value`` the human turn, ``images`` for ``len(example['image_path'])``, ``problem`` for
``example['problem']``, ``question_prompt`` the template of line 933). Not formatted or linted,
to stay verbatim.
"""

# ruff: noqa
# fmt: off


class Qwen2VLModule:
    @staticmethod
    def get_question_template(task_type: str):
        match task_type:
            case "rec":
                return "{Question} First output the thinking process in <think> </think> tags and then output the final answer in <answer> </answer> tags. Output the final answer in JSON format."
            case "ic":
                return "{Question} First thinks about the reasoning process in the mind and then provides the user with the answer. The reasoning process and answer are enclosed within <think> </think> and <answer> </answer> tags, respectively, i.e., <think> reasoning process here </think><answer> json format answer here </answer>"
            case "odLength":
                SYSTEM_PROMPT = (
                    #"A conversation between User and Assistant. The user asks a question, and the Assistant solves it. The assistant "
                    "First thinks about the reasoning process in the mind and then provides the user with the answer. The reasoning "
                    "process and answer are enclosed within <think> </think> and <answer> </answer> tags, respectively, i.e., "
                    "<think> reasoning process here </think><answer> answer here </answer>"
                )
                return SYSTEM_PROMPT + '\n' + "{Question}"
            case _:
                return "{Question} First output the thinking process in <think> </think> tags and then output the final answer in <answer> </answer> tags."
            


def released_prompt(value, images, question_prompt):
    problem = value.replace('<image>', '')
    return [{
                    'role': 'user',
                    'content': [
                        *({'type': 'image', 'text': None} for _ in range(images)),
                        {'type': 'text', 'text': question_prompt.format(Question=problem)}
                    ]
                }]
