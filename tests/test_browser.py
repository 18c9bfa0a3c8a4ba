"""The explorers as a student meets them: JupyterLab in a real browser (Debian's chromium, driven by Playwright).

One JupyterLab from the project's venv on a free local port (token set, no browser of its own, the notebooks copied
to a temporary folder so nothing is saved over them), every notebook opened with FEDCORE_SCALE=smoke and all its
cells run.  Then, for every explorer (an ``ipywidgets.interactive``): its widget area renders with every slider's
label and readout, each slider that is not greyed out is moved one step along its grid with the keyboard (as a
student's arrow key would), and within :data:`REDRAW_SECONDS` the figure is redrawn (the image differs from before).
After every move: no error output anywhere in the notebook, every readout shows its whole value (nothing cut off,
and one step changes what it shows), and every axis of the redrawn figure that shows tick labels has at least two
(read in the kernel from the figure the browser was sent).  A screenshot of each explorer after its moves goes to
``build/browser/``.  JupyterLab and the browser are stopped also when a test fails.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

playwright = pytest.importorskip("playwright.sync_api", reason="make setup installs playwright")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SHOTS = ROOT / "build" / "browser"
CHROMIUM = os.environ.get("FEDCORE_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
TOKEN = "fedcore-browser-test"
RUN_ALL_SECONDS = 300.0
"""The most one notebook's Run All may take at smoke scale (7-53 s on 2 cores)."""
REDRAW_SECONDS = 30.0
"""The most a slider move may take to redraw its explorer's figure (0.3-2.7 s alone on 2 cores)."""

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no chromium at {CHROMIUM} (make setup installs it)"),
]

TICK_PROBE = r"""
import json as _fedcore_json

import matplotlib.backend_bases as _fedcore_backend_bases

_fedcore_drawn = []  # per figure the browser is sent: [(axis, labelled ticks shown)] for axes that show tick labels


def _fedcore_labelled(axis):
    ticks = axis._update_ticks()  # the ticks drawn, within the view, their labels set
    labels = [label for tick in ticks for label in (tick.label1, tick.label2) if label.get_visible()]
    if not labels:
        return None  # this axis shows no tick labels (a shared axis, a colour bar's short side)
    return len({label.get_text() for label in labels if label.get_text().strip()})


def _fedcore_print_figure(self, *args, _original=_fedcore_backend_bases.FigureCanvasBase.print_figure, **kwargs):
    result = _original(self, *args, **kwargs)
    axes = []
    for number, ax in enumerate(self.figure.axes):
        if not ax.get_visible() or not ax.axison:
            continue
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            count = _fedcore_labelled(axis)
            if count is not None:
                axes.append((f"axes {number} ({ax.get_title()[:40]!r}) {name}", count))
    _fedcore_drawn.append(axes)
    return result


_fedcore_backend_bases.FigureCanvasBase.print_figure = _fedcore_print_figure
"""
"""Run in each notebook's kernel before its cells: records the labelled ticks of every figure it renders."""

PANEL = """const panel = Array.from(window.jupyterapp.shell.widgets("main"))
    .find((widget) => widget.context && widget.context.path === path);"""
"""The notebook's panel, found by its path (JupyterLab is started with expose_app_in_browser)."""


def _on_panel(head: str, body: str) -> str:
    """A JavaScript function ``head => {...}`` whose body starts by finding the notebook's ``panel``."""
    return f"{head} => {{\n{PANEL}\n{body}\n}}"


JS_EXECUTE = _on_panel("async ({path, code})", """
    const future = panel.sessionContext.session.kernel.requestExecute({code: code, store_history: false});
    let out = "";
    future.onIOPub = (msg) => {
        if (msg.header.msg_type === "stream") out += msg.content.text;
        if (msg.header.msg_type === "error") out += "ERROR " + msg.content.ename + ": " + msg.content.evalue;
    };
    await future.done;
    return out;""")
JS_READY = """(path) => {
    if (!window.jupyterapp) return false;
    %s
    const context = panel && panel.sessionContext;
    return Boolean(context && context.isReady && context.session && context.session.kernel &&
                   context.session.kernel.connectionStatus === "connected" && panel.content.widgets.length > 0);
}""".replace("%s", PANEL)
JS_RUN_ALL = _on_panel("async (path)", """
    window.jupyterapp.shell.activateById(panel.id);
    await window.jupyterapp.commands.execute("notebook:clear-all-cell-outputs");
    window.jupyterapp.commands.execute("notebook:run-all-cells");  // not awaited: it resolves when all cells ran
    return true;""")
JS_DONE = _on_panel("(path)", """
    const cells = panel.content.widgets.filter((cell) => cell.model.type === "code");
    return panel.sessionContext.session.kernel.status === "idle" &&
           cells.every((cell) => cell.model.executionCount !== null);""")
JS_IDLE = _on_panel("(path)", 'return panel.sessionContext.session.kernel.status === "idle";')
JS_OPEN = """async (path) => {
    await window.jupyterapp.restored;  // every plugin started: the document manager's commands exist
    await window.jupyterapp.commands.execute("docmanager:open", {path: path});
    return true;
}"""
JS_CLOSE = _on_panel("async (path)", """
    if (!panel) return;
    await panel.sessionContext.shutdown();
    panel.dispose();""")
JS_ERRORS = _on_panel("(path)", """
    return Array.from(panel.node.querySelectorAll('[data-mime-type="application/vnd.jupyter.error"]'))
        .map((node) => node.innerText.slice(0, 500));""")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[str]:
    """JupyterLab from the venv on a free port over a copy of the notebooks; its URL.  Stopped at the end, also on
    failure."""
    folder = tmp_path_factory.mktemp("lab")
    for notebook in NOTEBOOKS:
        shutil.copy(notebook, folder / notebook.name)
    settings = folder / ".settings"
    for plugin, values in {"notebook-extension/tracker": {"windowingMode": "none"},  # every cell in the page
                           "docmanager-extension/plugin": {"autosave": False},
                           "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False}
                           }.items():
        path = settings / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port = _free_port()
    env = {key: value for key, value in os.environ.items() if key != "MPLBACKEND"}  # the kernels' inline backend
    env.update(FEDCORE_SCALE="smoke", FEDCORE_STORE="off", JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(folder / ".workspaces"), PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
               f"--ServerApp.token={TOKEN}", f"--ServerApp.root_dir={folder}", "--LabApp.expose_app_in_browser=True",
               "--ServerApp.disable_check_xsrf=True", *(["--allow-root"] if os.getuid() == 0 else [])]
    log = (folder / "lab.log").open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=folder,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (folder / "lab.log").read_text()[-3000:]
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "JupyterLab did not listen within 60 s"
            time.sleep(0.3)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(process.pid, 15)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
        log.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Debian's chromium, headless, driven by Playwright; closed at the end, also on failure."""
    with playwright.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu",  # pages in the background keep running their notebooks at full speed:
            "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
            "--disable-backgrounding-occluded-windows"])
        try:
            yield launched
        finally:
            launched.close()


def _wait(page, script: str, path: str, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not page.evaluate(script, path):
        assert time.monotonic() < deadline, f"{what} not within {seconds:g} s"
        time.sleep(0.25)


def _image(explorer) -> str:
    images = explorer.locator(".widget-output img")
    return images.first.get_attribute("src") if images.count() else ""


def _readouts(explorer) -> list[dict]:
    return explorer.evaluate("""(node) => Array.from(node.querySelectorAll('.widget-slider')).map((slider) => {
        const readout = slider.querySelector('.widget-readout');
        const label = slider.querySelector('.widget-label');
        return {label: label ? label.innerText.trim() : '', readout: readout ? readout.innerText.trim() : null,
                cut: readout ? readout.scrollWidth > readout.clientWidth + 1 : false,
                disabled: slider.classList.contains('mod-disabled') ||
                          Boolean(slider.querySelector('[disabled]'))};
    })""")


def _kernel(page, path: str, code: str) -> str:
    """What ``code`` prints in the notebook's kernel."""
    return page.evaluate(JS_EXECUTE, {"path": path, "code": code})


@pytest.fixture(scope="module")
def page(lab, browser) -> Iterator[object]:
    """One JupyterLab page (a fresh workspace) for every notebook: booting JupyterLab once, not per notebook."""
    opened = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        opened.goto(f"{lab}/lab/workspaces/browser-test?token={TOKEN}&reset")
        _wait(opened, "() => Boolean(window.jupyterapp && window.jupyterapp.shell)", "", 90, "JupyterLab")
        yield opened
    finally:
        opened.close()


@pytest.mark.parametrize("notebook", [path.name for path in NOTEBOOKS])
def test_every_explorer_renders_and_redraws_in_the_browser(page, notebook) -> None:
    """One notebook at a time (several kernels side by side on 2 cores take longer than one after another): opened,
    Run All, every explorer moved; then closed and its kernel shut down."""
    page.evaluate(JS_OPEN, notebook)
    try:
        _wait(page, JS_READY, notebook, 90, f"{notebook}: the notebook and its kernel")
        assert "ERROR" not in _kernel(page, notebook, TICK_PROBE)
        started = time.monotonic()
        page.evaluate(JS_RUN_ALL, notebook)
        _wait(page, JS_DONE, notebook, RUN_ALL_SECONDS, f"{notebook}: Run All")
        ran = time.monotonic() - started
        assert page.evaluate(JS_ERRORS, notebook) == [], f"{notebook}: error output after Run All"
        moves = _explorers(page, notebook)
        print(f"{notebook}: Run All {ran:.1f} s; moves (explorer, slider, seconds): {moves}")
    finally:
        page.evaluate(JS_CLOSE, notebook)


def _explorers(page, notebook: str) -> list[tuple[int, str, float]]:
    """Every explorer of the notebook: rendered with its sliders' labels and whole readouts, each slider moved
    (:func:`_move`), a screenshot after the moves; the moves and their seconds."""
    explorers = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .widget-interact")
    assert explorers.count() > 0, f"{notebook} shows no explorer"
    moves = []
    for index in range(explorers.count()):
        explorer = explorers.nth(index)
        explorer.scroll_into_view_if_needed()
        _wait(page, JS_IDLE, notebook, REDRAW_SECONDS, "the kernel")
        assert _image(explorer), f"{notebook} explorer {index}: no figure"
        sliders = explorer.locator(".widget-slider")
        shown = _readouts(explorer)
        assert sliders.count() > 0 and len(shown) == sliders.count(), f"{notebook} explorer {index}: no sliders"
        for number, slider in enumerate(shown):
            assert slider["label"], f"{notebook} explorer {index}: slider {number} has no label"
            assert slider["readout"], f"{notebook} explorer {index}: slider {slider['label']} shows no value"
            assert not slider["cut"], f"{notebook} explorer {index}: {slider['label']}'s readout is cut off"
        for number in range(sliders.count()):
            label, seconds = _move(page, notebook, explorer, index, sliders.nth(number), number)
            if seconds is not None:
                moves.append((index, label, seconds))
        SHOTS.mkdir(parents=True, exist_ok=True)
        explorer.screenshot(path=str(SHOTS / f"{Path(notebook).stem}-explorer{index}.png"))
    return moves


def _move(page, notebook: str, explorer, index: int, slider, number: int) -> tuple[str, float | None]:
    """Move slider ``number`` of ``explorer`` one step with the keyboard (right, or left at its end), and check what
    a student sees: the figure redrawn within REDRAW_SECONDS, the readout whole and changed, no error output, two
    labelled ticks on every axis of the figures drawn.  Returns its label and the seconds (None: greyed out)."""
    before = _readouts(explorer)[number]
    if before["disabled"]:
        return before["label"], None  # greyed out: the chosen method does not use it
    handle = slider.locator(".noUi-handle")
    at_end = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
    image, drawn = _image(explorer), int(_kernel(page, notebook, "print(len(_fedcore_drawn))"))
    moved = time.monotonic()
    handle.focus()
    handle.press("ArrowLeft" if at_end else "ArrowRight")
    while not (_image(explorer) not in ("", image) and page.evaluate(JS_IDLE, notebook)):
        assert time.monotonic() < moved + REDRAW_SECONDS, (f"{notebook} explorer {index}: moving {before['label']} "
                                                           f"did not redraw within {REDRAW_SECONDS:g} s")
        time.sleep(0.1)
    seconds = time.monotonic() - moved
    after = _readouts(explorer)[number]
    where = f"{notebook} explorer {index}, {before['label']} {before['readout']} -> {after['readout']}"
    assert not after["cut"], f"{where}: the readout is cut off"
    assert after["readout"] != before["readout"], f"{where}: one step does not change the readout"
    assert page.evaluate(JS_ERRORS, notebook) == [], f"{where}: error output"
    figures = json.loads(_kernel(page, notebook, f"print(_fedcore_json.dumps(_fedcore_drawn[{drawn}:]))"))
    assert figures, f"{where}: no figure drawn"
    few = [(axis, count) for figure in figures for axis, count in figure if count < 2]
    assert not few, f"{where}: axes with fewer than two labelled ticks {few}"
    return before["label"], round(seconds, 2)
