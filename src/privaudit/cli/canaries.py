"""``privaudit canaries insert``: phase one of the two-phase Secret Sharer on the user's own corpus.

The command writes the corpus with canaries inserted and ``provenance.json``
(:func:`privaudit.canaries.corpus.insert_into_corpus`); the user trains on
that corpus with their own loop, and ``privaudit audit secret-sharer --model
DIR --provenance OUT/provenance.json`` measures the canaries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .app import app
from .options import emit, render_table

__all__ = ["canaries_app"]

canaries_app = typer.Typer(help="Canaries for your own corpus: insert them before you train (phase one of the Secret Sharer).", no_args_is_help=True)
app.add_typer(canaries_app, name="canaries")


def _schedule(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"`--schedule` must be comma-separated integers >= 1, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise ValueError(f"`--schedule` must be comma-separated integers >= 1, got {text!r}")
    return counts


@canaries_app.command("insert")
def insert(
    corpus: Annotated[Path, typer.Option("--corpus", help="Your training text: one example per line (lines), JSON lines, or CSV with a header.")],
    output: Annotated[Path, typer.Option("--output", help="Directory for the corpus with canaries and provenance.json.")],
    text_format: Annotated[str, typer.Option("--format", help="lines, jsonl or csv.")] = "lines",
    column: Annotated[Optional[str], typer.Option("--column", help="The text field (jsonl) or column (csv).")] = None,
    template: Annotated[str, typer.Option("--template", help="Canary format, e.g. 'my pin is {digits:6}'.")] = "my pin is {digits:6}",
    schedule: Annotated[str, typer.Option("--schedule", help="Insertion counts, comma-separated, e.g. 1,4,16.")] = "1,2,4,8,16,32",
    canaries_per_count: Annotated[int, typer.Option("--canaries-per-count", help="Distinct canaries inserted at each count.")] = 1,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the canaries and of their positions.")] = 0,
    secure: Annotated[bool, typer.Option("--secure-canaries", help="Draw canaries from the OS's secure randomness (not reproducible from --seed).")] = False,
) -> None:
    """Insert canaries into your corpus and write it with provenance.json; train on it, then run `privaudit audit secret-sharer --model ... --provenance ...`."""
    from .._core.files import check_output_dir, check_utf8_file
    from .._core.seeding import check_seed
    from .._core.validation import check_choice, check_count
    from ..canaries import CanaryFormat
    from ..canaries.corpus import TEXT_FORMATS, insert_into_corpus

    check_choice(text_format, "--format", TEXT_FORMATS)
    if not corpus.is_file():
        raise ValueError(f"`--corpus` must be an existing file, got {str(corpus)!r}")
    check_utf8_file(corpus, "--corpus")
    if text_format != "lines" and column is None:
        raise ValueError(f"`--column` must name the text field with --format {text_format}")
    counts = _schedule(schedule)
    check_count(canaries_per_count, "--canaries-per-count", minimum=1)
    seed = check_seed(seed, "--seed")
    check_output_dir(output)
    record = insert_into_corpus(
        corpus,
        CanaryFormat(template),
        output_dir=output,
        schedule=counts,
        canaries_per_count=canaries_per_count,
        seed=seed,
        text_format=text_format,
        column=column,
        secure=secure,
    )
    rows = [[str(entry["repetitions"]), entry["text"]] for entry in record.provenance.canaries]
    text = render_table(f"Canaries inserted into {output / record.corpus_file}", ["insertions", "canary"], rows)
    emit(
        text
        + f"provenance: {output / 'provenance.json'}\ntrain on {output / record.corpus_file}, then measure with `privaudit audit secret-sharer --model DIR --provenance {output / 'provenance.json'}`\n"
    )
