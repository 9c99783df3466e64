"""Vision-SR1's RL data loader, the part that renders a row's prompt, verbatim: the oracle of
``tests/items/test_prompts_released.py``.

Source: zli12321/Vision-SR1 @ 4480e08 (Apache-2.0), ``verl/utils/dataset.py``: the import of
``jinja2.Template`` (line 24), ``RLHFDataset._prefix_image_token`` (lines 144-166) and
``RLHFDataset._build_messages`` (lines 180-200), unchanged and de-indented into a class of their
own; and the two format prompts the scripts use, ``train_examples/format_prompt/
see_think_format.jinja`` and ``cot_format.jinja``, read from their files. Shim:
:class:`ReleasedLoader` holds the three attributes those methods read (``prompt_key``,
``image_key``, ``format_prompt``), set as ``selfReward_config.yaml`` and ``cot_config.yaml`` set
them. Not formatted or linted, to stay verbatim.
"""

# ruff: noqa
# fmt: off
from pathlib import Path
from typing import Any, Dict, List

from jinja2 import Template

HERE = Path(__file__).parent


class ReleasedLoader:
    def __init__(self, format_prompt_file: str, prompt_key: str = "problem", image_key: str = "images"):
        self.prompt_key = prompt_key
        self.image_key = image_key
        self.format_prompt = (HERE / format_prompt_file).read_text(encoding="utf-8")

    def _prefix_image_token(self, example: Dict[str, Any]) -> Dict[str, Any]:
        prompt_key = self.prompt_key
        img_token  = "<image>"

        prompt = example[prompt_key]

        # Only operate if exactly one <image> tag is present
        if self.image_key in example and (prompt.count(img_token) == 1):
            # remove the tag wherever it is, strip trailing spaces
            prompt = prompt.replace(img_token, "").rstrip()
            # append a single tag at the end, separated by one space
            # example[prompt_key] = f"{prompt}{img_token}".lstrip()
            example[prompt_key] = prompt + "<image>"
        
        if self.image_key in example and (prompt.count(img_token) == 0):
            prompt = prompt.replace("<image>", "")
            if not prompt.lstrip().startswith("<image>"):
                example[self.prompt_key] = prompt + "<image>"
        
        # if self.image_key not in example:
        #     example[prompt_key] = prompt + "<image>"

        return example

    def _build_messages(self, example: Dict[str, Any]) -> List[Dict[str, Any]]:
        prompt_str: str = example[self.prompt_key]
        if self.format_prompt:
            format_prompt = Template(self.format_prompt.strip())
            prompt_str = format_prompt.render(content=prompt_str)

        if self.image_key in example:
            # https://huggingface.co/docs/transformers/en/tasks/image_text_to_text
            # if not prompt_str.lstrip().startswith("<image>"):
            #     prompt_str = "<image> " + prompt_str
            content_list = []
            for i, content in enumerate(prompt_str.split("<image>")):
                if i != 0:
                    content_list.append({"type": "image"})

                if content:
                    content_list.append({"type": "text", "text": content})

            return [{"role": "user", "content": content_list}]
        else:
            return [{"role": "user", "content": prompt_str}]
