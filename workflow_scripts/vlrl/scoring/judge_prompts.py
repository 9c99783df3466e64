"""The judge's prompts: one per answer type, and the graded ones a benchmark defines itself.

Each prompt has a name, a version (part of the cache key: bump it whenever the text or the
parser changes, so no verdict of an older prompt is reused) and a strict parser.

Binary prompts (the verifier pattern of CompassVerifier, arXiv:2508.03686, and VLMEvalKit's
``vlmeval/dataset/utils/verifier.py``): a role line, the rules of the answer type, two worked
examples (one right, one wrong), the item between delimiters, and a closed vocabulary: the
reply's last line must be exactly ``1`` or ``0`` (:func:`parse_verdict`). The item's score is
the verdict.

Graded prompts return a score in [0, 1] (MM-Vet's grader: :data:`MMVET_GRADER`,
:func:`parse_mmvet_score`); an item is *correct* when it is graded 1.0 ("totally right"), and
the benchmark's own number is the mean score.

Extraction prompts return what the answer chose, which is then compared with the reference
(LogicVista's letter extractor: :data:`LOGICVISTA_EXTRACTOR`, :func:`parse_logicvista_letters`,
:func:`logicvista_hit`).

A reply that does not parse is never read as a verdict: the judge records a failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_VERDICT = re.compile(
    r"(?:(?:final\s+)?(?:verdict|answer|judgment|judgement|grade)\s*[:=]?\s*)?"
    r"(?:\\boxed\{\s*([01])\s*\}|([01]))\.?",
    re.IGNORECASE,
)


def parse_verdict(reply: str | None) -> int | None:
    """The verdict of a binary reply: its last non-empty line, after dropping
    ``<think>…</think>`` and Markdown emphasis, must be exactly ``0`` or ``1`` (optionally
    ``Verdict: 1``, ``\\boxed{1}``, a trailing full stop). Anything else is None: a failure.

    >>> [parse_verdict(r) for r in ["1", " 0\\n", "Verdict: 1", "**0**", "<think>so 0</think>1"]]
    [1, 0, 1, 0, 1]
    >>> [parse_verdict(r) for r in ["", "correct", "0 or 1", "10", "1\\nI am not sure", None]]
    [None, None, None, None, None, None]
    """
    if not reply:
        return None
    text = _THINK.sub("", reply)
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    last = lines[-1].strip().replace("*", "").replace("`", "").strip().strip("\"'").strip()
    match = _VERDICT.fullmatch(last)
    if match is None:
        return None
    return int(match.group(1) or match.group(2))


def _binary_score(reply: str) -> float:
    verdict = parse_verdict(reply)
    if verdict is None:
        raise ValueError(f"reply is not a 0/1 verdict: {reply[:200]!r}")
    return float(verdict)


def parse_mmvet_score(reply: str) -> float:
    """MM-Vet's grader reply, read as ``mm-vet_evaluator.py`` reads it:
    ``float(content.split(" ")[0].strip())``, in [0, 1].

    Raises:
        ValueError: anything else (the official script asks again at a higher temperature and
            scores 0.0 after five tries; here the item is a judge failure, never a score).

    >>> parse_mmvet_score("0.5"), parse_mmvet_score("1.0 because")
    (0.5, 1.0)
    >>> parse_mmvet_score("correct")
    Traceback (most recent call last):
    ValueError: reply is not an MM-Vet score in [0, 1]: 'correct'
    """
    token = reply.split(" ")[0].strip()
    try:
        value = float(token)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"reply is not an MM-Vet score in [0, 1]: {reply[:200]!r}")
    return value


@dataclass(frozen=True)
class JudgePrompt:
    """One judge prompt: ``render`` builds the user message from the question, the reference and
    the candidate; ``parse`` reads the reply (raising ValueError when it cannot) into a score in
    [0, 1], or, with ``compare``, into what the candidate chose, which ``compare`` scores against
    the reference."""

    name: str
    version: str
    render: Callable[[str, str, str], str]
    parse: Callable[[str], Any]
    own_layout: bool = False
    """The prompt lays out the raw question and answer itself (MM-Vet's table, LogicVista's
    extractor), instead of the question with its options and the reference's option text."""
    max_tokens: int | None = None
    """The reply budget the prompt's authors use (None: ``score.judge.max_tokens``)."""
    compare: Callable[[Any, str], float] | None = None

    def score(self, parsed: Any, reference: str) -> float:
        """The item's score from a parsed reply.

        >>> PROMPTS["logicvista"].score("CA", "A, C"), PROMPTS["mmvet"].score(0.5, "x")
        (1.0, 0.5)
        """
        return float(self.compare(parsed, reference) if self.compare else parsed)


# ---------------------------------------------------------------------------- binary prompts
_ROLE = (
    "You are a strict grader. Decide whether a candidate's final answer to a question matches "
    "the reference answer."
)
_COMMON_RULES = (
    "- Compare only the candidate's final answer with the reference answer; ignore any reasoning.",
    "- A refusal, an empty, truncated or repetitive answer, or an answer that offers several "
    "different answers is incorrect.",
    "- Reply with exactly one token: 1 if the candidate is correct, 0 if it is incorrect. Write "
    "nothing else.",
)
_ITEM = (
    "<Question Begin>{question}<Question End>\n"
    "<Reference Begin>{reference}<Reference End>\n"
    "<Candidate Begin>{candidate}<Candidate End>\n"
    "Verdict:"
)


def _binary_template(rules: tuple[str, ...], examples: tuple[tuple[str, str, str, int], ...]):
    shots = "".join(
        "Example:\n" + _ITEM.format(question=q, reference=r, candidate=c) + f" {v}\n\n"
        for q, r, c, v in examples
    )
    head = (
        f"{_ROLE}\n\nRules:\n"
        + "\n".join((*rules[:1], *_COMMON_RULES[:1], *rules[1:], *_COMMON_RULES[1:]))
        + f"\n\n{shots}Now grade this candidate.\n"
    )

    def render(question: str, reference: str, candidate: str) -> str:
        return head + _ITEM.format(question=question, reference=reference, candidate=candidate)

    return render


_BINARY: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str, str, int], ...]]] = {
    "multiple_choice": (
        (
            "- The question offers options; the reference is the correct option's letter and text.",
            "- The candidate is correct if it chooses that option, by its letter or by its text "
            "(or an unmistakable paraphrase of it), and no other option.",
        ),
        (
            ("What is shown?\nOptions: A. a cat  B. a dog", "B. a dog", "(B)", 1),
            ("What is shown?\nOptions: A. a cat  B. a dog", "B. a dog", "A cat.", 0),
        ),
    ),
    "numerical": (
        (
            "- The answer is a number or a mathematical expression.",
            "- Equal values match whatever their form: 0.5 and 1/2, 3 and three, 1,000 and "
            "1000, with or without the unit the question asks for. A value rounded to the "
            "precision the reference shows matches; a different value, or another unit without "
            "conversion, does not.",
            "- If the reference has several parts (a list, a pair, an interval), every part "
            "must match.",
        ),
        (
            ("How many circles are in the image?", "3", "three", 1),
            ("What is the length of AB?", "4\\sqrt{2}", "5.2 cm", 0),
        ),
    ),
    "yes_no": (
        (
            "- The reference is yes or no.",
            '- The candidate is correct if it answers the same, in any words ("Yes, it is", '
            '"No."); hedging between both is incorrect.',
        ),
        (
            ("Is the square left of the circle?", "yes", "Yes, it is on the left.", 1),
            ("Is there a dog?", "no", "There might be one.", 0),
        ),
    ),
    "free_form": (
        (
            "- The answer is a short text: a word, a name, a phrase or a number.",
            "- Equivalent forms match: synonyms, spelling and case variants, 3 and three, the "
            "same quantity with or without units.",
            "- If the reference has several parts, every part must match.",
        ),
        (
            ("What color is the square?", "red", "It is red.", 1),
            ("What color is the square?", "red", "The square is blue.", 0),
        ),
    ),
}


# --------------------------------------------------------------------------- graded prompts
#: MM-Vet's few-shot grader prompt, verbatim: the ``prompt`` string of the authors'
#: ``mm-vet_evaluator.py`` (github.com/yuweihao/MM-Vet, commit acde843e, file last changed in
#: c7ff270d). lmms-eval ``tasks/mmvet/utils.py::MM_VET_PROMPT`` differs in one place: no blank
#: line after the instructions and the table header "gpt_query_prompt | Ground truth | ..."
#: (a search-and-replace slip for "Question"); VLMEvalKit
#: ``vlmeval/dataset/utils/mmvet.py::build_mmvet_gpt4_prompt`` wraps the same text over lines.
MMVET_GRADER = (
    "Compare the ground truth and prediction from AI models, to give a correctness score for "
    "the prediction. <AND> in the ground truth means it is totally right only when all elements "
    "in the ground truth are present in the prediction, and <OR> means it is totally right when "
    "any one element in the ground truth is present in the prediction. The correctness score is "
    "0.0 (totally wrong), 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, or 1.0 (totally right). "
    "Just complete the last space of the correctness score.\n"
    "\n"
    "Question | Ground truth | Prediction | Correctness\n"
    "--- | --- | --- | ---\n"
    "What is x in the equation? | -1 <AND> -5 | x = 3 | 0.0\n"
    "What is x in the equation? | -1 <AND> -5 | x = -1 | 0.5\n"
    "What is x in the equation? | -1 <AND> -5 | x = -5 | 0.5\n"
    "What is x in the equation? | -1 <AND> -5 | x = -5 or 5 | 0.5\n"
    "What is x in the equation? | -1 <AND> -5 | x = -1 or x = -5 | 1.0\n"
    "Can you explain this meme? | This meme is poking fun at the fact that the names of the "
    "countries Iceland and Greenland are misleading. Despite its name, Iceland is known for its "
    "beautiful green landscapes, while Greenland is mostly covered in ice and snow. The meme is "
    "saying that the person has trust issues because the names of these countries do not "
    "accurately represent their landscapes. | The meme talks about Iceland and Greenland. It's "
    "pointing out that despite their names, Iceland is not very icy and Greenland isn't very "
    "green. | 0.4\n"
    "Can you explain this meme? | This meme is poking fun at the fact that the names of the "
    "countries Iceland and Greenland are misleading. Despite its name, Iceland is known for its "
    "beautiful green landscapes, while Greenland is mostly covered in ice and snow. The meme is "
    "saying that the person has trust issues because the names of these countries do not "
    "accurately represent their landscapes. | The meme is using humor to point out the "
    "misleading nature of Iceland's and Greenland's names. Iceland, despite its name, has lush "
    "green landscapes while Greenland is mostly covered in ice and snow. The text 'This is why I "
    "have trust issues' is a playful way to suggest that these contradictions can lead to "
    "distrust or confusion. The humor in this meme is derived from the unexpected contrast "
    "between the names of the countries and their actual physical characteristics. | 1.0\n"
)


def mmvet_query(question: str, answer: str, prediction: str) -> str:
    """The grader's user message for one item, as ``mm-vet_evaluator.py::runs`` builds it:
    the prompt, a newline, then ``question | answer | prediction | `` with spaces put around
    ``<AND>`` / ``<OR>`` in the answer.

    >>> mmvet_query("What is x?", "-1<AND>-5", "x = -1")[-37:]
    '\\nWhat is x? | -1 <AND> -5 | x = -1 | '
    """
    reference = answer.replace("<AND>", " <AND> ").replace("<OR>", " <OR> ")
    return MMVET_GRADER + "\n" + " | ".join([question, reference, prediction, ""])


# ------------------------------------------------------------------------- extraction prompts
#: LogicVista's letter extractor, verbatim: ``build_prompt_logicvista`` of VLMEvalKit
#: (open-compass/VLMEvalKit@e8e78f05 ``vlmeval/dataset/utils/logicvista.py``; the text unchanged
#: since the file's lint pass 42a7d8a4), which scores LogicVista only through it.
LOGICVISTA_EXTRACTOR = (
    "You are a information extractor that extracts multiple choice letter answer choices "
    "from a paragraph that contains the answer choice and sometimes explaination of why that "
    "choice is correct to the given question.\n"
    "What letter did the following answer choose? If the answer did not select a letter answer "
    "choice, "
    "first try to infer the answer based off the given choices.\n"
    "If it does not seem like the given answer corresponds to an answer choice OR if there is no "
    "selected answer, please just respond with Z.\n"
    "Make sure you answer with ONLY the letters chosen.\n"
    "Example 1: \n"
    "Question: <start>\nWhat is the main object in image?\nOptions: A. teddy bear B. rabbit C. "
    "cat D. dog\n<end>\n"
    "Answer: <start>\na cute teddy bear\n<end>\nYour output: A\n"
    "Example 2: \n"
    "Question: <start>\nWhat is the main object in image?\nOptions: A. teddy bear B. rabbit C. "
    "cat D. dog\n<end>\n"
    "Answer: <start>\nSpider\n<end>\nYour output: Z\n"
    "Example 3: \n"
    "Question: <start>\nWhich figure is a rotation of the object?\n<end>\n"
    'Answer: <start>\nThe figure on the right, labeled "D," is a rotation of the object shown '
    "in the top left corner.\n<end>\nYour output: D\n"
    "Example 4: \n"
    "Question: <start>\nWhich of the boxes comes next in the sequence? Select from A-E\n<end>\n"
    "Answer: <start>\nThe sequence of the boxes is A, B, C, D, E.\n<end>\nYour output: ABCDE\n"
    "Example 5: \n"
    "Question: <start>\n{}\n<end>\nAnswer: <start>\n{}\n<end>\nYour output: "
)


def logicvista_query(question: str, reference: str, candidate: str) -> str:
    """The extractor's user message: the question and the answer in the last example's slots
    (``tmpl.format(question, prediction)``; the reference is not shown).

    >>> logicvista_query("Which box?", "B", "Box B.").split("Example 5: \\n")[1]
    'Question: <start>\\nWhich box?\\n<end>\\nAnswer: <start>\\nBox B.\\n<end>\\nYour output: '
    """
    return LOGICVISTA_EXTRACTOR.format(question, candidate)


def parse_logicvista_letters(reply: str) -> str:
    """The letters the extractor read, as ``LogicVista_auxeval`` accepts them: the reply
    stripped (VLMEvalKit's OpenAI wrapper strips the content, ``vlmeval/api/gpt.py``), then only
    upper-case letters (``res.isupper() and res.isalpha()``); ``Z`` is the extractor's "no
    choice".

    Raises:
        ValueError: anything else. VLMEvalKit asks again at a higher temperature (0.5 more per
            try, five tries) and scores 0 after the fifth; here the item is a judge failure.

    >>> parse_logicvista_letters(" AC\\n"), parse_logicvista_letters("Z")
    ('AC', 'Z')
    >>> parse_logicvista_letters("A, C")
    Traceback (most recent call last):
    ValueError: reply is not LogicVista's upper-case letters: 'A, C'
    """
    letters = reply.strip()
    if not (letters.isupper() and letters.isalpha()):
        raise ValueError(f"reply is not LogicVista's upper-case letters: {reply[:200]!r}")
    return letters


def logicvista_hit(letters: str, answer: str) -> float:
    """1.0 when the extracted letters are the answer's, as ``LogicVista_auxeval`` compares them:
    the answer split on ", ", each part lower-cased, sorted and joined; the letters lower-cased,
    sorted and joined (order does not matter, a repeated letter does).

    >>> logicvista_hit("CA", "A, C"), logicvista_hit("AAC", "A, C"), logicvista_hit("Z", "B")
    (1.0, 0.0, 0.0)
    """
    expected = "".join(sorted(part.lower() for part in answer.split(", ")))
    return float("".join(sorted(letter.lower() for letter in letters)) == expected)


PROMPTS: dict[str, JudgePrompt] = {
    **{
        name: JudgePrompt(name, f"{name}-v1", _binary_template(*spec), _binary_score)
        for name, spec in _BINARY.items()
    },
    # max_tokens=3: the authors' setting (a grade such as "0.5" needs no more)
    "mmvet": JudgePrompt(
        "mmvet", "mmvet-v1", mmvet_query, parse_mmvet_score, own_layout=True, max_tokens=3
    ),
    # max_tokens=128: LogicVista.evaluate builds its judge with max_tokens=128
    "logicvista": JudgePrompt(
        "logicvista",
        "logicvista-v1",
        logicvista_query,
        parse_logicvista_letters,
        own_layout=True,
        max_tokens=128,
        compare=logicvista_hit,
    ),
}
"""Every judge prompt by name (a benchmark's ``judge.prompt`` names one)."""

#: The prompt each answer type gets when its benchmark names none.
BY_PROBLEM_TYPE = {
    "multiple_choice": "multiple_choice",
    "numerical": "numerical",
    "yes_no": "yes_no",
    "free_form": "free_form",
    "ocr": "free_form",
}


def prompt_for(problem_type: str, name: str | None = None) -> JudgePrompt:
    """The prompt named ``name``, else the one of the answer type.

    >>> prompt_for("ocr").version, prompt_for("numerical", "mmvet").version
    ('free_form-v1', 'mmvet-v1')

    Raises:
        KeyError: an unknown name, or an answer type without a judge prompt (boxes).
    """
    if name is not None:
        return PROMPTS[name]
    return PROMPTS[BY_PROBLEM_TYPE[problem_type]]
