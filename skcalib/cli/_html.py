"""``report.html``: the answers, the figure and the table of ``skcalib report``
on one page (no script, no external resource; every value escaped)."""

from __future__ import annotations

from html import escape

__all__ = ["render_html"]

# Links name the built documentation's pages relative to its root (the
# project publishes no address): DOCS_ROOT is prefixed to them.
DOCS_ROOT = ""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto;
       padding: 0 1rem; color: #222; line-height: 1.45; }}
h1 {{ font-size: 1.4rem; }} h2 {{ font-size: 1.15rem; margin-top: 2rem; }}
.answer {{ border-left: 4px solid #4a7bb7; padding: .3rem .8rem; margin: .8rem 0; }}
.answer h3 {{ margin: 0; font-size: 1rem; }}
.verdict {{ margin: .2rem 0; }}
.read {{ color: #555; font-size: .9rem; margin: .2rem 0; }}
img {{ max-width: 100%; }} dt {{ font-weight: 600; }} dd {{ margin: 0 0 .5rem 1rem; }}
pre {{ background: #f4f6f8; padding: .6rem; overflow-x: auto; font-size: .85rem; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p>{summary}</p>
<section id="answers">
<h2>Answers</h2>
{answers}
</section>
{figure}
<section id="measures">
<h2>Measures</h2>
<pre>{table}</pre>
</section>
<p class="read">Links name pages of the skcalib documentation relative to
its root (build it with <code>python -m sphinx doc build/html</code>).</p>
<section id="legend">
<h2>Legend</h2>
<dl>
{legend}
</dl>
</section>
</body>
</html>
"""


def _answer(a):
    link = escape(DOCS_ROOT + a["href"], quote=True)
    read = f'<p class="read">{escape(a["how_to_read"])}</p>' if a["how_to_read"] else ""
    return (
        f'<div class="answer" id="{escape(a["key"], quote=True)}">'
        f"<h3>{escape(a['question'])}</h3>"
        f'<p class="verdict">{escape(a["verdict"])}</p>{read}'
        f'<p class="read">Read more: <a href="{link}">{escape(a["section"])}</a></p>'
        "</div>"
    )


def render_html(*, title, summary, answers, legend, table, figure_name=None):
    """The page as a string.

    ``answers`` is the list of :func:`._answers.answers`, ``legend`` a list of
    ``(name, text)``, ``table`` the terminal table, ``figure_name`` the file
    name of the reliability diagram beside the page (or None).
    """
    figure = ""
    if figure_name is not None:
        src = escape(figure_name, quote=True)
        figure = (
            '<section id="figure"><h2>Reliability diagram</h2>'
            f'<img src="{src}" alt="smooth reliability diagram"></section>'
        )
    return TEMPLATE.format(
        title=escape(title),
        summary=escape(summary),
        answers="\n".join(_answer(a) for a in answers),
        figure=figure,
        table=escape(table),
        legend="\n".join(
            f"<dt>{escape(name)}</dt><dd>{escape(text)}</dd>" for name, text in legend
        ),
    )
