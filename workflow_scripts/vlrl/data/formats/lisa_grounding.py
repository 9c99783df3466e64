"""LISA-Grounding, VLM-R1's out-of-domain REC test, read from VLM-R1's own files as the
``omlab/VLM-R1`` hub dataset stores them: the annotations ``lisa_test.json`` inside
``rec_jsons_processed.zip`` and the pictures in ``lisa_test.zip`` (1.2 GB; the hub's file
listing spells it with an underscore, VLM-R1's README link ``…/resolve/main/lisa-test.zip``
with a hyphen, so either name is accepted). The reader, the item schema and the mapping to
records are :mod:`vlrl.data.formats.vlm_r1_rec`'s, ported from ``om-ai-lab/VLM-R1``
``src/eval/test_rec_r1.py`` (``TEST_DATASETS = ['lisa_test']`` at HEAD
``90052f478646e38bc67363862f699b7afca6b337``, ``IMAGE_ROOT`` the unpacked pictures).

Raw layout specific to LISA: an item's ``image`` is relative to the folder ``lisa_test.zip`` was
unpacked in; a third-party LISA evaluator expects that folder to hold ``test/`` beside
``lisa_test.json``, so ``test/<name>.jpg``. The member read is that path, or the one member
ending with ``/`` + that path (an archive with an extra top folder); none, or several, is an
error naming the item. ``solution`` is ``[x1, y1, x2, y2]`` in pixels of the original picture
(VLM-R1's Qwen2.5-VL annotations).

Row count: ``lisa_test.json`` must hold 1,658 items. Every LISA-Grounding accuracy of VLM-R1's
Table 2 (arXiv 2504.07615v2: 54.82 … 63.14 %) is ``k / 1,658`` truncated to two decimals, and
1,658 is the only test size between 1,500 and 2,100 for which all of them are (of them only
62.6 is also a ``k / 2,000``). So test_rec_r1.py's ``data[:2000]`` cut (``num_samples =
2000``, applied to every dataset after the seeded shuffle) keeps every item.

Mapping: as :mod:`vlrl.data.formats.vlm_r1_rec` (one record per item, in the json's order, id
``lisa_test-<position>``, groups by picture), with ``task`` = ``lisa_test`` (the json's stem,
also the records split) and ``data_source`` = ``lisa_grounding``. The benchmark is
``config/benchmarks/lisa_grounding.yaml`` (256 new tokens, IoU > 0.5, the first box read in the
model-input frame, ``subsample: {n: 2000, seed: 42}``) over ``config/datasets/lisa_grounding.yaml``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from vlrl.data.formats import ImageStore
from vlrl.data.formats.vlm_r1_rec import convert_rec_jsons
from vlrl.items.records import Record

DATA_SOURCE = "lisa_grounding"
#: Split → member file name of ``rec_jsons_processed.zip``.
FILES = {"lisa_test": "lisa_test.json"}
#: Member → the items it must hold (module docstring).
ROWS = {"lisa_test.json": 1_658}
ABOUT = {"lisa_test.json": "VLM-R1's LISA-Grounding test"}
#: The image archive under either spelling (hub listing, README link).
IMAGE_ARCHIVES = ("lisa_test.zip", "lisa-test.zip")


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("lisa_test", record) for every item of ``lisa_test.json``, in its order."""
    yield from convert_rec_jsons(
        source,
        images,
        files=FILES,
        rows=ROWS,
        about=ABOUT,
        image_archives=IMAGE_ARCHIVES,
        data_source=DATA_SOURCE,
    )
