"""SATORI-R1's released format reward, verbatim: the oracle of
``tests/rewards/test_satori_think.py``.

Source: justairr/SATORI-R1 @ 8857b30 (``plugin.py`` last changed in 8923be7), copied for testing
only: the class ``Format`` (lines 17-30, unchanged) and its registration (line 162). Shims, not
code changes: ``ORM`` and ``orms`` stand in for ms-swift's ``swift.plugin.orm`` (an empty base
class and its registry dict). Not formatted or linted, to stay verbatim.
"""

# ruff: noqa
# fmt: off
import re
from typing import List


class ORM:  # shim: swift.plugin.orm.ORM
    pass


orms = {}  # shim: swift.plugin.orm.orms

class Format(ORM):
    """
    Reward function to check if the completion has the required format.
    The expected format includes <caption>, <bbox>, and <answer> tags.
    """
    def __call__(self, completions, **kwargs) -> List[float]:
        """Reward function that checks if the completion has the required format."""
        pattern = (
            r'^\s*<caption>.*?</caption>\s*'
            r'<bbox>\s*\[\[.*?\]\]\s*</bbox>\s*'
            r'<answer>.*?</answer>\s*$'
        )
        matches = [re.match(pattern, content, re.DOTALL | re.MULTILINE) for content in completions]
        return [1.0 if match else 0.0 for match in matches]

orms['external_format'] = Format
