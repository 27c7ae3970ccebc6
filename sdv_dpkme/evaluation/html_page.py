"""Building blocks of the package's self-contained HTML pages: escaping, number and score
cells, tables, sections, embedded PNG figures and the stylesheet (no scripts, no external files).

Every string that reaches a page goes through ``e`` (or a helper that calls it).
"""

import base64
import html
import math


def e(value):
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape(str(value), quote=True)


def format_number(value, digits=3):
    if value is None:
        return '–'
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(value):
        return '–'
    if math.isinf(value):
        return '∞' if value > 0 else '−∞'
    if value.is_integer() and abs(value) < 1e15:
        return f'{int(value):,}'
    return f'{value:.{digits}g}'


def score_cell(score):
    """A 0-1 score with a bar and a colour band (red < 0.5 <= amber < 0.8 <= green)."""
    try:
        score = float(score)
    except (TypeError, ValueError):
        score = float('nan')
    if math.isnan(score):
        return '<td class="score na">–</td>'
    band = 'bad' if score < 0.5 else 'fair' if score < 0.8 else 'good'
    width = max(0.0, min(1.0, score)) * 100
    return (f'<td class="score {band}"><span class="bar" style="width:{width:.0f}%"></span>'
            f'<span class="value">{score:.3f}</span></td>')


def png_figure(data, alt, kind, caption=None, columns=()):
    encoded = base64.b64encode(data).decode('ascii')
    names = ' | '.join(map(str, columns))
    caption_html = f'<figcaption>{e(caption)}</figcaption>' if caption else ''
    return (f'<figure class="plot {kind}" data-columns="{e(names)}">'
            f'<img alt="{e(alt)}" src="data:image/png;base64,{encoded}">{caption_html}</figure>')


def html_table(headers, rows, cls='data', row_classes=None):
    """``rows`` hold ready HTML cells (``<td>...``) or plain values (escaped here)."""
    head = ''.join(f'<th>{e(h)}</th>' for h in headers)
    body = []
    for i, row in enumerate(rows):
        cells = []
        for cell in row:
            text = str(cell)
            cells.append(text if text.startswith('<td') else f'<td>{e(text)}</td>')
        row_class = f' class="{e(row_classes[i])}"' if row_classes and row_classes[i] else ''
        body.append(f'<tr{row_class}>{"".join(cells)}</tr>')
    return (f'<table class="{cls}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def html_section(section_id, title, body, note=None):
    note_html = f'<p class="section-note">{note}</p>' if note else ''
    return (f'<section id="{section_id}"><h2>{e(title)}</h2>{note_html}{body}</section>')


STYLE = """
body{font:14px/1.45 -apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif;color:#1d2733;
margin:0;background:#f4f6f8}
main{max-width:1120px;margin:0 auto;padding:24px 32px 48px;background:#fff;
box-shadow:0 0 12px rgba(0,0,0,.06)}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:0 0 8px;padding-bottom:4px;
border-bottom:2px solid #e3e8ee}h3{font-size:15px;margin:18px 0 6px;color:#33485e}
.subtitle{color:#5b6b7c;margin:0 0 16px}
section{margin:28px 0}.section-note{color:#5b6b7c;margin:0 0 10px}
.banner{border-radius:6px;padding:12px 16px;margin:12px 0 4px}
.banner.real{background:#fdecea;border:2px solid #c62828;color:#7f1d1d}
.banner.private{background:#e8f5e9;border:1px solid #2e7d32;color:#1b4d20}
nav{margin:12px 0;font-size:13px}nav a{margin-right:14px;color:#1f6fb4;text-decoration:none}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
table.data{width:100%}
th,td{padding:4px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #e3e8ee}
thead th{background:#eef2f6;font-weight:600}
table.facts{width:100%}table.facts th{width:30%;color:#33485e;font-weight:600;background:none}
table.data tbody tr:nth-child(even){background:#fafbfc}
table.ledger td:nth-child(3){max-width:380px}
td.score{position:relative;min-width:90px;white-space:nowrap}
td.score .bar{position:absolute;left:0;top:3px;bottom:3px;opacity:.28;border-radius:2px}
td.score .value{position:relative;font-variant-numeric:tabular-nums}
td.good .bar{background:#2e7d32}td.fair .bar{background:#f9a825}td.bad .bar{background:#c62828}
table.overall{width:auto}table.overall td.score{min-width:140px}
.grid{display:grid;grid-template-columns:repeat(2,1fr);gap:10px}
figure{margin:6px 0;text-align:center}figure img{max-width:100%;height:auto}
figcaption{font-size:12px;color:#5b6b7c}
ul.compact{columns:2;font-size:12px;padding-left:18px}
code{background:#eef2f6;padding:1px 4px;border-radius:3px}
details{margin-top:4px;font-size:12px}details ol{margin:4px 0;padding-left:20px}
tr.mean td{font-weight:600;border-top:2px solid #c9d2dc}
footer{color:#8494a5;font-size:12px;margin-top:32px}
"""
