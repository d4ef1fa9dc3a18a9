"""mkdocs hooks: the API pages and the CLI reference are generated from the code when the site is built.

A page holding ``<!-- api:NAME -->`` gets one mkdocstrings entry per public
name of that group, and ``<!-- cli-reference -->`` the typer CLI's own help,
so neither can go stale: a new public name, audit family or option appears
on the next build, and ``mkdocs build --strict`` fails on a name that does
not resolve.
"""

from __future__ import annotations

import re

_MARKER = re.compile(r"<!-- (api:[\w-]+|cli-reference) -->")


def _entries(names: list[str]) -> str:
    return "\n\n".join(f"::: {name}" for name in names)


def _privaudit_names() -> list[str]:
    import privaudit

    return [f"{module}.{name}" for name, module in sorted(privaudit._EXPORTS.items())]


def _audit_names() -> list[str]:
    from privaudit.audits.registry import AUDITS, get_audit

    found = ["privaudit.audits.registry.get_audit", "privaudit.audits.base.Audit", "privaudit.audits.base.AuditResult", "privaudit.audits.base.Headline"]
    for name in AUDITS:
        audit = get_audit(name)
        for kind in (type(audit), audit.config_type, audit.result_type):
            found.append(f"{kind.__module__}.{kind.__qualname__}")
    found.append("privaudit.report.runs.write_run")
    return list(dict.fromkeys(found))


def _models_names() -> list[str]:
    return [
        "privaudit.models.loading.load_model",
        "privaudit.models.loading.LoadedModel",
        "privaudit._core.conventions",
        "privaudit.models.hf.HFCausalLMScorer",
    ]


def _testing_names() -> list[str]:
    import privaudit.testing

    return [f"privaudit.testing.{name}" for name in privaudit.testing.__all__]


GROUPS = {"api:privaudit": _privaudit_names, "api:audits": _audit_names, "api:models": _models_names, "api:testing": _testing_names}


def _cli_reference() -> str:
    import typer
    from typer.cli import get_docs_for_click

    from privaudit.cli import app

    command = typer.main.get_command(app)
    return get_docs_for_click(obj=command, ctx=typer.Context(command), name="privaudit", title="CLI reference")


def on_page_markdown(markdown: str, **_: object) -> str:
    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "cli-reference":
            return _cli_reference()
        return _entries(GROUPS[key]())

    return _MARKER.sub(replace, markdown)
