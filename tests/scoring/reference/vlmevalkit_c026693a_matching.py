"""VLMEvalKit's multiple-choice matching as SophiaVL-R1 and SATORI-R1 were scored (May 2025),
verbatim: ``can_infer_option``, ``can_infer_text``, ``can_infer``.

Source: github.com/open-compass/VLMEvalKit ``vlmeval/utils/matching_util.py`` at commit
c026693a1cdac9292447eb480579dc2e11fb6f1c (2025-08-04, the parent of c3371551, which added the
last-five-words window and the option-text length limit). The three functions are identical in
SATORI-R1's vendored fork (github.com/justairr/SATORI-R1 at
8857b30f6a0931f5a2db566dbd1e91607eea481f, ``VLMEvalKit/vlmeval/utils/matching_util.py``).
Changed: ``from ..smp import *`` became the two imports used (``cp``, a logger). Licence:
Apache-2.0 (the repository's LICENSE); copied for testing only.
"""

# ruff: noqa
# fmt: off
import copy as cp
import logging
import os
import string


def get_logger(name):
    return logging.getLogger(name)


def can_infer_option(answer, choices):
    verbose = os.environ.get('VERBOSE', 0)
    # Choices is a dictionary
    if 'Failed to obtain answer via API' in answer:
        return False

    reject_to_answer = [
        "Sorry, I can't help with images of people yet.",
        "I can't process this file.",
        "I'm sorry, but without the image provided",
        'Cannot determine the answer'
    ]
    for err in reject_to_answer:
        if err in answer:
            return 'Z'

    def count_choice(splits, choices, prefix='', suffix=''):
        cnt = 0
        for c in choices:
            if prefix + c + suffix in splits:
                cnt += 1
        return cnt

    answer_mod = cp.copy(answer)
    chars = '.()[],:;!*#{}'
    for c in chars:
        answer_mod = answer_mod.replace(c, ' ')

    splits = [x.strip() for x in answer_mod.split()]
    count = count_choice(splits, choices)

    if count == 1:
        for ch in choices:
            if 'A' in splits and len(splits) > 3 and verbose:
                logger = get_logger('Evaluation')
                logger.info(f'A might be a quantifier in the string: {answer}.')
                return False
            if ch in splits:
                return ch
    elif count == 0 and count_choice(splits, {'Z', ''}) == 1:
        return 'Z'
    return False


def can_infer_text(answer, choices):
    answer = answer.lower()
    assert isinstance(choices, dict)
    for k in choices:
        assert k in string.ascii_uppercase
        choices[k] = str(choices[k]).lower()
    cands = []
    for k in choices:
        if choices[k] in answer:
            cands.append(k)
    if len(cands) == 1:
        return cands[0]
    return False


def can_infer(answer, choices):
    answer = str(answer)
    copt = can_infer_option(answer, choices)
    return copt if copt else can_infer_text(answer, choices)
