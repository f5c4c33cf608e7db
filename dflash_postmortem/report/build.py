"""Batch reports: run the notebooks with papermill and turn them into self-contained HTML.

This is the only module that knows papermill and nbconvert. Each page embeds plotly.js once, so a
report opens with no internet; secrets are redacted from every output before it is written.
"""

from __future__ import annotations

import contextlib
import functools
import html
import json
import os
import re
import sys
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pandas as pd

from ..analysis.timeline import timeline
from ..errors import MissingDependencyError, PostmortemError
from ..present.evidence_views import link_refs, parse_ref, view_href, write_file_views
from ..present.redact import redact
from ..vendor import PLOTLY_CARTESIAN, PLOTLY_JS_VERSION
from .cache import CACHE_ENV, cache_dir
from .index import index_html, page_entry
from .kernels import Kernels, execute_page, shared_kernels
from .notebook import ONLINE_ENV, REDACT_ENV, figure_bundle, load_cached

NOTEBOOK_DIR_ENV = "DFLASH_NOTEBOOKS"
PLOTLY_JS = "plotly.min.js"


def notebook_dir() -> Path:
    """The report's notebooks: `DFLASH_NOTEBOOKS`, else those installed with the package (a
    checkout maps its top-level `notebooks/` there)."""
    given = os.environ.get(NOTEBOOK_DIR_ENV)
    if given:
        return Path(given)
    return Path(str(resources.files("dflash_postmortem.notebooks")))


@dataclass
class Page:
    notebook: Path
    executed: Path
    html: Path
    error: str | None = None


def notebooks(only: list[str] | None = None, folder: Path | None = None) -> list[Path]:
    """The report's notebooks in order; `only` picks by number (`01`) or name (`overview`)."""
    folder = folder if folder is not None else notebook_dir()
    found = sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb"))
    if not found:
        raise PostmortemError(f"{folder}: no notebooks found (expected NN_topic.ipynb files)")
    if not only:
        return found
    picked = []
    for want in only:
        hits = [p for p in found if p.stem == want or p.stem.split("_", 1)[0] == want or p.stem.split("_", 1)[1] == want]
        if not hits:
            names = ", ".join(p.stem for p in found)
            raise PostmortemError(f"--only {want}: no such notebook; choose from {names}")
        picked.extend(h for h in hits if h not in picked)
    return picked


def parse_params(pairs: list[str]) -> dict[str, str]:
    """`key=value` strings from the command line; values are typed later, per notebook."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise PostmortemError(f"--param {pair!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def notebook_tools():
    """nbformat and papermill, imported without jsonschema's optional IRI format checker: where
    `rfc3987_syntax` is installed (JupyterLab's jsonschema[format-nongpl] brings it) jsonschema
    builds 39 lark grammars when it is imported (~1.8 s), for a format no notebook schema uses.
    The block lasts for this import only."""
    blocked = "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules
    if blocked:
        sys.modules["rfc3987_syntax"] = None  # an import of it raises ImportError, which jsonschema expects
    try:
        import nbformat  # start-up time: the notebook machinery loads only for a report
        import papermill
    except ImportError as e:  # pragma: no cover - both are runtime dependencies
        raise MissingDependencyError(e.name or "papermill", "report") from e
    finally:
        if blocked:
            del sys.modules["rfc3987_syntax"]
    return nbformat, papermill


def typed_params(nb: Path, params: dict) -> dict:
    """Check parameters against the notebook's `parameters` cell and give them its types."""
    _, pm = notebook_tools()

    declared = pm.inspect_notebook(str(nb))
    typed = {}
    for key, value in params.items():
        if key not in declared:
            continue  # a parameter another notebook declares
        kind = (declared[key].get("inferred_type_name") or "").lower()
        if not isinstance(value, str):
            typed[key] = value
            continue
        try:
            if kind.startswith("int"):
                typed[key] = int(value)
            elif kind.startswith("float"):
                typed[key] = float(value)
            elif kind.startswith("bool"):
                if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(value)
                typed[key] = value.lower() in ("true", "1", "yes")
            elif kind.startswith(("list", "dict")):
                typed[key] = json.loads(value)
            else:
                typed[key] = value
        except ValueError as e:
            raise PostmortemError(f"--param {key}={value!r}: {nb.stem} expects {kind or 'a value'}") from e
    return typed


def _check_known(pages_nbs: list[Path], params: dict) -> None:
    _, pm = notebook_tools()

    declared = set()
    for nb in pages_nbs:
        declared |= set(pm.inspect_notebook(str(nb)))
    unknown = sorted(set(params) - declared)
    if unknown:
        raise PostmortemError(f"unknown notebook parameter(s) {unknown}; the notebooks declare {sorted(declared)}")


def redact_notebook(nb) -> None:
    """Redact secrets in every output of an executed notebook, in place."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = redact(out["text"])
            data = out.get("data", {})
            for mime, value in list(data.items()):
                if isinstance(value, str):
                    data[mime] = redact(value)
                elif mime.endswith("json"):
                    data[mime] = json.loads(redact(json.dumps(value)))
            if "traceback" in out:
                out["traceback"] = [redact(t) for t in out["traceback"]]


# Tables hold evidence text: left-aligned reads better than pandas' right-aligned default.
_STYLE = """<style>
.jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th { text-align: left !important; vertical-align: top; }
.jp-RenderedHTMLCommon table { font-size: 12px; }
</style>"""
_CDN_SCRIPT = re.compile(r'<script[^>]*\ssrc="https?://[^"]*"[^>]*>\s*</script>\s*')


def write_plotly_js(out: Path) -> Path:
    """plotly.js once for the whole report folder, loaded by every page from beside it: the
    folder stays self-contained (copy or zip it whole) and opens with no internet. The cartesian
    bundle where it is the version plotly.py writes figures for (vendor/), else plotly.py's own
    full bundle: figures written for another plotly.js may need what the bundle lacks."""
    from plotly.offline import get_plotlyjs, get_plotlyjs_version  # start-up: only a report

    path = out / PLOTLY_JS
    if get_plotlyjs_version() == PLOTLY_JS_VERSION and PLOTLY_CARTESIAN.is_file():
        data = PLOTLY_CARTESIAN.read_bytes()
    else:
        data = get_plotlyjs().encode("utf-8")
    if not path.exists() or path.stat().st_size != len(data):
        path.write_bytes(data)
    return path


@functools.lru_cache(maxsize=2)
def _exporter(show_code: bool):
    """One HTML exporter per setting for the process: each new exporter compiles the lab
    template's nine Jinja files again (~0.25 s a page). Pages are written by one thread."""
    from nbconvert import HTMLExporter  # start-up time: nbconvert loads only for a report

    exporter = HTMLExporter(template_name="lab")
    exporter.exclude_input = not show_code
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    return exporter


def to_html(nb, title: str, show_code: bool, index_href: str | None) -> str:
    body, _ = _exporter(show_code).from_notebook_node(nb, resources={"metadata": {"name": title}})
    # The lab template loads require.js and MathJax from a CDN: a report must not reach the
    # internet, and with require.js present plotly.js registers as an AMD module, not window.Plotly.
    body = _CDN_SCRIPT.sub("", body)
    # plotly.js from the report folder, in the head, before any figure's script runs; a page
    # with no figure does without it (a browser runs its 1.5 MB again for every page that loads it).
    script = f"<script type=\"text/javascript\" src=\"{PLOTLY_JS}\"></script>\n" if "Plotly.newPlot(" in body else ""
    head = f"{script}{_STYLE}\n</head>"
    body = body.replace("</head>", head, 1)
    if index_href:
        nav = f'<nav style="padding:8px 16px;font-family:sans-serif"><a href="{index_href}">&larr; report index</a></nav>'
        body = body.replace("<main>", "<main>" + nav, 1)
    return body


def build_report(
    incident_dir: Path,
    out: Path,
    *,
    only: list[str] | None = None,
    params: dict | None = None,
    show_code: bool = False,
    progress: bool = True,
    static: bool = False,
    redact_secrets: bool = True,
    on_bad_line: str = "skip",
    online: bool = False,
    kernels: Kernels | None = None,
) -> Path:
    """Run the notebooks on `incident_dir` (a folder, or one file read as a one-file incident),
    write one HTML page each and an index; return it.

    The kernels start first; while they start and import the kit, this process loads the
    incident once (the pages read it from the cache, see notebook.load); while the pages run,
    it draws the index. `on_bad_line="raise"` (`--strict`) stops at the first unreadable file
    or line, before any page runs. `online`: the servers incident.toml names are queried too
    (the pages' kernels are told so). `kernels`: those of `shared_kernels()`, for several reports
    in a row (else the report starts its own)."""
    incident_dir = Path(incident_dir).resolve()
    if not incident_dir.exists():
        raise PostmortemError(f"{incident_dir}: no such incident folder or file")
    # a file is a one-file incident: its evidence refs name it relative to its folder
    root = incident_dir if incident_dir.is_dir() else incident_dir.parent
    chosen = notebooks(only)
    params = dict(params or {})
    params.setdefault("incident_dir", str(incident_dir))
    timezone = str(params.get("timezone", ""))
    with loading_cache(), _env(REDACT_ENV, "1" if redact_secrets else "0"), _env(ONLINE_ENV, "1" if online else "0"), \
            (contextlib.nullcontext(kernels) if kernels is not None else shared_kernels(len(chosen), progress)) as kernels:
        # what the pages read from their environment: set in each page's kernel before it runs
        env = {name: os.environ[name] for name in (CACHE_ENV, REDACT_ENV, ONLINE_ENV)}
        nbformat, pm = notebook_tools()
        _check_known(chosen, params)
        out = Path(out).resolve()
        (out / "executed").mkdir(parents=True, exist_ok=True)
        write_plotly_js(out)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inc, findings = load_cached(str(incident_dir), timezone, on_bad_line, masked=redact_secrets,
                                        online=online)

        from papermill.iorw import load_notebook_node
        from papermill.parameterize import parameterize_notebook

        def execute(km, nb_path: Path) -> tuple[Page, object]:
            page = Page(nb_path, out / "executed" / nb_path.name, out / f"{nb_path.stem}.html")
            # papermill's reader gives every cell the metadata its parameterizer expects
            nb = parameterize_notebook(load_notebook_node(str(nb_path)), typed_params(nb_path, params),
                                       kernel_name=km.kernel_name)
            page.error = execute_page(nbformat, km, nb, env)
            return page, nb

        def written(nb_path: Path, result) -> None:
            _write_page(nbformat, *result, out, show_code, static, redact_secrets)

        batch = kernels.run(chosen, execute, written, progress)
        front = _front_page(inc, findings, redact_secrets, root)
        pages = [page for page, _ in (batch.results()[nb] for nb in chosen)]
    index = out / "index.html"
    index.write_text(front([page_entry(p.notebook, p.html.name, p.error) for p in pages]), encoding="utf-8")
    _link_evidence(root, out, [index, *(p.html for p in pages)], findings, redact_secrets)
    failed = [p for p in pages if p.error]
    if failed:
        names = ", ".join(f"{p.notebook.stem} ({p.error})" for p in failed)
        raise PostmortemError(f"report written to {index}, but notebook(s) failed: {names}")
    return index


@contextlib.contextmanager
def loading_cache():
    """The cache folder every kernel of one report reads the loaded incident from (they inherit
    its environment variable): the caller's, else the user's cache folder, which JupyterLab
    reads too."""
    with _env(CACHE_ENV, str(cache_dir())):
        yield


@contextlib.contextmanager
def _env(name: str, value: str):
    """Set an environment variable for the block, unless the caller already set it."""
    if os.environ.get(name):
        yield
        return
    os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)


def _write_page(nbformat, page: Page, nb, out: Path, show_code: bool, static: bool, redact_secrets: bool) -> None:
    """The executed notebook (masked) and its HTML page."""
    if redact_secrets:
        redact_notebook(nb)
    nbformat.write(nb, str(page.executed))
    page.html.write_text(to_html(nb, page.notebook.stem, show_code, "index.html"), encoding="utf-8")
    if static:
        export_static(nb, out / "figures" / page.notebook.stem)


def export_static(nb, folder: Path) -> list[Path]:
    """PNG copies of every figure, where kaleido and a Chromium are available."""
    try:
        import kaleido  # noqa: F401
    except ImportError as e:
        raise MissingDependencyError("kaleido", "static figure export (--static)") from e
    import plotly.io as pio

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    n = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            fig = out.get("data", {}).get("application/vnd.plotly.v1+json")
            if fig is None:
                continue
            n += 1
            path = folder / f"figure_{n:02d}.png"
            try:
                pio.write_image(fig, str(path), format="png", width=1200, height=700)
            except Exception as e:  # kaleido raises its own types when Chromium is missing
                raise PostmortemError(f"static export failed ({e}); kaleido needs a Chromium: install one or drop --static") from e
            written.append(path)
    return written


def _front_page(inc, findings, redact_secrets: bool, root: Path):
    """The front page (report_index) but for its list of pages: the summary card and the
    overview figure, drawn while the pages run; the returned function finishes it."""
    from ..present import figures as plots  # start-up time: plotting loads only for a report
    from ..present import tables

    tl = timeline(inc, findings)
    headline = tables.headline(findings, tl)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        figure = figure_bundle(plots.plot_overview(**tables.overview(inc, findings)))["text/html"]
    headline = headline if isinstance(headline, pd.DataFrame) else None
    mask = redact if redact_secrets else str
    return lambda entries: index_html(inc, findings, tl, headline, figure, entries, PLOTLY_JS, root, mask)


# A ref the notebooks' tables linked (to the file, for JupyterLab), or one in a <code> element.
_TABLE_REF = re.compile(r'<a class="pm-ref" data-ref="([^"]*)" href="[^"]*">')
_CODE = re.compile(r"<code>([^<]*)</code>")


def _link_evidence(root: Path, out: Path, html_files: list[Path], findings, redact_secrets: bool) -> None:
    """Point every evidence ref of the report at its line in a file view, and write the views:
    the refs the pages show and every ref a finding cites."""
    refs = {r for ev in findings["evidence"] for x in ev if (r := parse_ref(x)) is not None}
    for page in html_files:
        text = page.read_text(encoding="utf-8")
        text = _TABLE_REF.sub(lambda m: _view_link(m.group(1)), text)
        text = _CODE.sub(lambda m: "<code>" + link_refs(m.group(1), root, view_href) + "</code>", text)
        refs |= {r for x in re.findall(r'data-ref="([^"]*)"', text) if (r := parse_ref(html.unescape(x))) is not None}
        page.write_text(text, encoding="utf-8")
    write_file_views(root, refs, out, redacted=redact_secrets)


def _view_link(ref_attr: str) -> str:
    ref = parse_ref(html.unescape(ref_attr))
    href = view_href(ref) if ref is not None else "#"
    return f'<a class="pm-ref" data-ref="{ref_attr}" href="{html.escape(href)}">'
