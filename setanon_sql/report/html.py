"""Self-contained HTML pages: one run (or a dataset as loaded), and the trade-off across runs.

One file with inline CSS and inline SVG; a Content-Security-Policy forbids every fetch and every
script, so the page reads the same offline and prints cleanly. All text is escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any

from setanon_sql.report.figures import format_value

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       max-width: 70rem; margin: 1.5rem auto; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { font-size: 1.25rem; margin-top: 2rem;
     border-bottom: 1px solid #ddd; padding-bottom: .2rem; } h3 { font-size: 1.05rem; }
.sub { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .92rem; }
th, td { border: 1px solid #ddd; padding: .25rem .6rem; text-align: left; vertical-align: top; }
th { background: #f5f5f5; font-weight: 600; } td.num { text-align: right; white-space: nowrap;
     font-variant-numeric: tabular-nums; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(30rem, 1fr)); gap: 1rem; }
figure { margin: 0; padding: .5rem; border: 1px solid #e5e5e5; border-radius: 4px;
         break-inside: avoid; }
figure svg { width: 100%; height: auto; } figcaption { font-size: .88rem; color: #444; }
.verdict { padding: .6rem .9rem; border-radius: 4px; margin: .6rem 0; font-weight: 600; }
.met { background: #e3f4e6; border: 1px solid #7cc48a; }
.notmet { background: #fbe3e3; border: 1px solid #d77; }
.unknown { background: #f4f1e3; border: 1px solid #cbb96b; }
.grid > * { min-width: 0; overflow-x: auto; } .wide { overflow-x: auto; }
details { margin: .4rem 0; }
footer { margin-top: 2rem; color: #666; font-size: .85rem; }
@media print { body { max-width: none; margin: 0; } .grid { display: block; }
               figure { margin-bottom: .8rem; } details > * { display: block; } }
"""
_NUM = ' class="num"'
_PARAM_NAMES = {"rho": "ρ", "sigma": "σ", "epsilon": "ε", "eps": "ε", "delta": "δ",
                "ell": "ℓ"}


def page(title: str, body: str) -> str:
    """A complete, self-contained HTML document."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{_CSS}</style></head>\n"
            f"<body>\n{body}\n</body></html>\n")


def table(header: list[str] | None, rows: list[list[Any]], numeric: set[int] | None = None) -> str:
    """An HTML table (no header row without ``header``); cells are escaped, short cells of
    the columns in ``numeric`` right-aligned (long ones wrap as text)."""
    numeric = numeric or set()
    head = ("<thead><tr>" + "".join(f"<th>{escape(str(h))}</th>" for h in header)
            + "</tr></thead>") if header else ""
    body = "".join(
        "<tr>" + "".join(f'<td{_NUM if i in numeric and len(str(c)) <= 24 else ""}>'
                         f"{escape(str(c))}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows)
    return f"<table>{head}<tbody>{body}</tbody></table>"


def figure(figure_id: str, svg: str, caption: str) -> str:
    """One plot with its caption; ``figure_id`` is what tests and links look for."""
    return (f'<figure id="{escape(figure_id)}" data-figure="{escape(figure_id)}">{svg}'
            f"<figcaption>{escape(caption)}</figcaption></figure>")


def param_name(key: str) -> str:
    return _PARAM_NAMES.get(key, key)


def params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{param_name(k)} = {v}" for k, v in sorted(params.items())
                     if v is not None) or "none"


def verdict(result: dict[str, Any] | None) -> str:
    """The verification outcome in a coloured box, with what it covered."""
    if result is None:
        return ""
    status = result["status"]
    css = {"met": "met", "NOT MET": "notmet"}.get(status, "unknown")
    text = {"met": "Privacy guarantee met", "NOT MET": "Privacy guarantee NOT met"}.get(
        status, f"Verification {status}")
    covered = f"; checked {result['covered']}" if result.get("covered") else ""
    message = f": {result['message']}" if result.get("message") else ""
    seconds = f" ({result['seconds']:.1f} s)" if result.get("seconds") is not None else ""
    details = ""
    if result.get("details"):
        details = ("<details><summary>what the verification found</summary>"
                   + table(["detail", "value"], [[k, format_value(k, v)] for k, v in
                                                 sorted(result["details"].items())])
                   + "</details>")
    return (f'<div class="verdict {css}" id="verification">{escape(text + message + covered)}'
            f"{escape(seconds)}</div>{details}")
