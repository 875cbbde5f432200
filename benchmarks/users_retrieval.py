"""How far can example-based retrieval go on the users suite? Nearest neighbour, no library.

    python benchmarks/users_retrieval.py

Embeds the 208 train messages as examples (labelled with their workflow) and each of the
52 test messages as a query (all-MiniLM-L6-v2, as the library uses), and counts the test
tasks whose nearest example is of their own workflow, with the examples and queries written
several ways:

* raw: the messages as they are;
* params masked in examples: the train task's param values replaced by ``{name}``, the query
  raw (what a library that masks its examples but embeds the task as given sees);
* value-shaped tokens masked on both sides: emails, ``#W`` order ids, payment method ids and
  long numbers replaced by placeholders (a mask ``fetch`` could apply to any query);
* params masked on both sides: an upper reference (``fetch`` does not know a query's params).

It measures retrieval only; `python -m benchmarks users` measures the library.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
for key, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
    os.environ.setdefault(key, value)

from benchmarks.harness import suite_path  # noqa: E402
from benchmarks.tasks.shop_users import say_list  # noqa: E402
from benchmarks.worlds import Task, load_tasks  # noqa: E402


def mask_params(task: Task) -> str:
    text = task.instruction
    values = [(say_list(v) if isinstance(v, list) else str(v), k) for k, v in task.params.items()]
    for value, name in sorted(values, key=lambda vk: -len(vk[0])):
        text = text.replace(value, "{" + name + "}")
    return text


def mask_values(text: str) -> str:
    text = re.sub(r"[\w.+-]+@[\w-]+(\.[\w-]+)+", "{email}", text)
    text = re.sub(r"\b(credit_card|gift_card|paypal)_\d+", "{payment_method}", text)
    text = re.sub(r"#W\d+", "{order}", text)
    return re.sub(r"\b\d{6,}\b", "{id}", text)


def main() -> int:
    import numpy as np

    from skill_library.embeddings import SentenceTransformerEmbedder

    started = time.perf_counter()
    tasks = load_tasks("shop", path=suite_path("shop", "users"))
    train = [t for t in tasks if t.split == "train"]
    test = [t for t in tasks if t.split == "test"]
    embedder = SentenceTransformerEmbedder(threads=1)
    ways = {
        "raw": (lambda t: t.instruction, lambda t: t.instruction),
        "params masked in examples": (mask_params, lambda t: t.instruction),
        "value-shaped tokens masked on both sides": (lambda t: mask_values(t.instruction),
                                                     lambda t: mask_values(t.instruction)),
        "params masked on both sides (reference)": (mask_params, mask_params),
    }
    print(f"{len(train)} train messages as examples, {len(test)} test messages as queries")
    for label, (example, query) in ways.items():
        vectors = np.asarray(embedder.embed([example(t) for t in train]))
        queries = np.asarray(embedder.embed([query(t) for t in test]))
        right = 0
        confused: Counter[str] = Counter()
        for task, best in zip(test, (queries @ vectors.T).argmax(axis=1)):  # unit vectors: cosine
            nearest = train[int(best)].workflow
            right += nearest == task.workflow
            if nearest != task.workflow:
                confused[f"{task.workflow} -> {nearest}"] += 1
        top = ", ".join(f"{k} x{v}" for k, v in confused.most_common(3)) or "-"
        print(f"  {label}: nearest example of the right workflow {right}/{len(test)} "
              f"({100 * right / len(test):.0f}%); most confused: {top}")
    print(f"finished in {time.perf_counter() - started:.1f} s: python benchmarks/users_retrieval.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
