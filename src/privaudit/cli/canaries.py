"""``privaudit canaries``: phase one of the two-phase audits on the user's own corpus.

* ``insert``: the Secret Sharer's canaries. The command writes the corpus
  with canaries inserted and ``provenance.json``
  (:func:`privaudit.canaries.corpus.insert_into_corpus`); the user trains on
  that corpus with their own loop, and ``privaudit audit secret-sharer
  --model DIR --provenance OUT/provenance.json`` measures the canaries.
* ``lm``: canaries designed for LM fine-tuning, each included by a fair coin
  (:func:`privaudit.canaries.lm_provenance.prepare_lm_canaries`); the corpus
  with the included canaries, ``provenance.json`` and, for new-token
  canaries, the resized model to fine-tune; ``privaudit audit lm-one-run``
  measures them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Optional

import typer

from .app import app
from .options import emit, render_table

__all__ = ["canaries_app"]

canaries_app = typer.Typer(
    help="Canaries for your own corpus: insert them before you train (phase one of the Secret Sharer and the LM one-run audit).", no_args_is_help=True
)
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
    from .._core.files import check_output_apart, check_output_dir, check_utf8_file
    from .._core.seeding import check_seed
    from .._core.validation import check_choice, check_count
    from ..canaries import CanaryFormat
    from ..canaries.corpus import TEXT_FORMATS, insert_into_corpus
    from .flag_names import flags_for, flags_in_messages

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
    check_output_apart(output, [("--corpus", corpus)])
    with flags_in_messages(flags_for(template="--template"), None):
        canary_format = CanaryFormat(template)
    wanted = canaries_per_count * len(counts)
    if wanted > canary_format.space_size:  # distinct canaries: checked here, where the two options that multiply are known
        raise ValueError(
            f"`--canaries-per-count` × the {len(counts)} `--schedule` counts asks for {wanted} distinct canaries, "
            f"but `--template` {template!r} has only {canary_format.space_size}: lower them or lengthen the template's holes"
        )
    with flags_in_messages(flags_for(column="--column"), None):
        record = insert_into_corpus(
            corpus,
            canary_format,
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


# what each --scored value records in the provenance (its `span`)
SCORED = {"secret": "secret", "whole": "text"}
# designs that draw from the base model's weights, not its tokenizer alone
NEEDS_WEIGHTS = ("new-tokens", "least-likely", "high-temperature")


def _base_model(directory: Path, design: str):
    """(model or None, tokenizer) of the user's Hugging Face directory: the weights are loaded only for the designs that draw from them."""
    from ..models.hf import quiet_loading

    if not directory.is_dir():
        raise ValueError(f"`--base-model` must be a Hugging Face model directory (save_pretrained: the model and its tokenizer), got {str(directory)!r}")
    if design in NEEDS_WEIGHTS:
        from ..models.loading import load_model

        try:
            with quiet_loading():
                loaded = load_model(directory, kind="huggingface", option="--base-model")
        except ValueError as error:
            raise ValueError(f"`--base-model`: design {design!r} draws from the base model's weights, and {error}") from None
        return loaded.model, loaded.tokenizer
    import transformers

    from ..models.model_files import HF_LOAD_OPTIONS, check_hf_directory

    check_hf_directory(directory, "--base-model")  # before transformers reads it: no code of the directory's runs
    try:
        with quiet_loading():
            return None, transformers.AutoTokenizer.from_pretrained(directory, **HF_LOAD_OPTIONS)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"`--base-model`: {str(directory)!r} has no loadable tokenizer: {error}") from None


@canaries_app.command("lm")
def lm(
    base_model: Annotated[
        Path, typer.Option("--base-model", help="Your Hugging Face causal LM and its tokenizer (a save_pretrained directory), before fine-tuning.")
    ],
    corpus: Annotated[Path, typer.Option("--corpus", help="Your fine-tuning text: one example per line (lines), JSON lines, or CSV with a header.")],
    output: Annotated[Path, typer.Option("--output", help="Directory for the corpus with the included canaries, provenance.json and, for new-tokens, model/.")],
    design: Annotated[
        str, typer.Option("--design", help="random-tokens, new-tokens (default), least-likely, bigram, high-temperature or prefix-suffix.")
    ] = "new-tokens",
    text_format: Annotated[str, typer.Option("--format", help="lines, jsonl or csv.")] = "lines",
    column: Annotated[Optional[str], typer.Option("--column", help="The text field (jsonl) or column (csv).")] = None,
    count: Annotated[int, typer.Option("--count", help="Canaries drawn; each is included by a fair coin (at least 4).")] = 100,
    length: Annotated[int, typer.Option("--length", help="Tokens in each canary's secret (new-tokens: after a new-token prefix of its own).")] = 4,
    scored: Annotated[
        str,
        typer.Option("--scored", help="secret (default: the secret given its prefix, what Panda et al. found strongest) or whole (the whole text)."),
    ] = "secret",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the canaries, the fair coins and the canaries' positions in the corpus.")] = 0,
    new_rows: Annotated[
        str,
        typer.Option(
            "--new-rows",
            help="new-tokens: where the new tokens' output rows start: mean (transformers' start) or expected (the base model's expected row "
            "after a canary's prefix, where a canary's gradient lands on rows of its own).",
        ),
    ] = "mean",
) -> None:
    """Draw LM canaries, include each by a fair coin in your corpus, and write provenance.json; fine-tune, then run `privaudit audit lm-one-run`."""
    from .._core.files import check_output_apart, check_output_dir, staged_output
    from .._core.results import library_versions
    from .._core.seeding import check_seed, child_seeds
    from .._core.validation import check_choice, check_count
    from ..canaries.corpus import TEXT_FORMATS
    from ..canaries.lm import DESIGNS, NEW_ROWS
    from ..canaries.lm_corpus import corpus_file_name, corpus_with_canaries, read_corpus_records
    from ..canaries.lm_limits import check_lm_sizes, model_sizes
    from ..canaries.lm_provenance import prepare_lm_canaries
    from ..models.hf import quiet_loading
    from .flag_names import flag_text, flags_for

    check_choice(design, "--design", DESIGNS)
    check_choice(text_format, "--format", TEXT_FORMATS)
    check_choice(scored, "--scored", tuple(SCORED))
    check_choice(new_rows, "--new-rows", NEW_ROWS)
    if new_rows != "mean" and design != "new-tokens":
        raise ValueError(f"`--new-rows` {new_rows!r} starts the rows of new tokens: it needs --design new-tokens, got {design!r}")
    count = check_count(count, "--count", minimum=4)  # the provenance holds at least 4 canaries
    length = check_count(length, "--length", minimum=1)
    seed = check_seed(seed, "--seed")
    if text_format != "lines" and column is None:
        raise ValueError(f"`--column` must name the text field with --format {text_format}")
    check_output_dir(output)
    check_output_apart(output, [("--corpus", corpus), ("--base-model", base_model)])
    context, hidden = model_sizes(base_model)
    check_lm_sizes(design, count=count, length=length, context=context, hidden=hidden)  # before the corpus is read or a model loaded
    records = read_corpus_records(corpus, text_format=text_format, column=column)
    model, tokenizer = _base_model(base_model, design)
    with staged_output(output) as scratch:
        saved = scratch / "model" if design == "new-tokens" else None
        try:
            with quiet_loading():  # transformers' notes on resizing and saving are shown once it succeeds, without progress bars
                provenance, _, _ = prepare_lm_canaries(
                    design,
                    tokenizer,
                    count=count,
                    seed=seed,
                    length=length,
                    span=SCORED[scored],
                    model=model,
                    texts=records.texts,
                    save_to=saved,
                    new_rows=new_rows,
                )
        except ValueError as error:  # the library names its arguments; here they are the command's options
            raise ValueError(
                flag_text(str(error), flags_for(texts="--corpus", model="--base-model", count="--count", length="--length", span="--scored"))
            ) from None
        # a third child of --seed: prepare_lm_canaries spawns "canaries" and "inclusion" from it in this order
        positions_seed = child_seeds(seed, ["canaries", "inclusion", "positions"])["positions"]
        text, positions = corpus_with_canaries(records, provenance.included_texts(), seed=positions_seed)
        name = corpus_file_name(text_format)
        (scratch / name).write_text(text, encoding="utf-8")
        settings = {
            "base_model": str(base_model),
            "corpus": {"source": str(corpus), "file": name, "format": text_format, "column": column},
            "positions_seed": positions_seed,
            "positions": positions,  # record index of each included canary, in the provenance's order
            "copies": 1,
            "model_to_fine_tune": "model" if saved is not None else str(base_model),
            "device": None if model is None else str(next(model.parameters()).device),  # the base model's draws depend on it
            "versions": library_versions(),
        }
        provenance = dataclasses.replace(provenance, settings=provenance.settings | settings)
        provenance.write(scratch / "provenance.json")
    emit(_lm_summary(provenance, output, name, base_model, saved is not None))


def _lm_summary(provenance, output: Path, corpus_name: str, base_model: Path, resized: bool) -> str:
    """What was written and what to do next."""
    tune = output / "model" if resized else base_model
    lines = [
        f"{len(provenance.included)} {provenance.design} canaries, {sum(provenance.included)} included by fair coins (seed {provenance.seed}), "
        f"scored on {'the secret given its prefix' if provenance.span == 'secret' else 'the whole text'}",
        f"corpus with the included canaries (each once): {output / corpus_name}",
        f"provenance: {output / 'provenance.json'}",
    ]
    repeated = len(provenance.texts) - len(set(provenance.texts))
    if repeated:  # a canary whose twin has the other coin scores as included: valid, but it costs the test power
        lines.append(
            f"note: {repeated} canaries repeat another's text (short secrets or a small vocabulary draw alike); the bound stays valid "
            "but loses power: a larger --length avoids it"
        )
    if resized:
        lines.append(f"resized model and tokenizer with the {len(provenance.new_tokens)} new tokens: {tune} (fine-tune this one, not {base_model})")
    lines.append(
        f"fine-tune {tune} on {output / corpus_name}, save_pretrained the model and tokenizer to DIR, then measure with "
        f"`privaudit audit lm-one-run --model DIR --provenance {output / 'provenance.json'} --base-model {tune}` "
        "(add --bos prepend or --bos none if your training put a BOS token before each text, or did not: the default, auto, checks it)"
    )
    return "\n".join(lines) + "\n"
