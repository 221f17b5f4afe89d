"""headrace view end to end in headless Chromium (Debian's chromium and chromium-driver, through Selenium):
the page loads and shows the CPU note, play advances the frame number, the slider jumps to a frame and the
image changes, a drag turns the view, the panel shows throughput, the look controls reach the renderer,
and paths outside the served files are refused. Screenshots go to out/test-artifacts/viewer/ (or
$HEADRACE_TEST_ARTIFACTS)."""

from __future__ import annotations

import io
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import headrace
from headrace.generate import generate_volume

webdriver = pytest.importorskip("selenium.webdriver", reason="Selenium is not installed (scripts/setup.sh installs it)")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="no chromium and chromedriver (Debian's chromium, "
                                "chromium-driver: scripts/setup.sh installs them)")

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from headrace.viewer import ViewerServer  # noqa: E402

ARTIFACTS = Path(os.environ.get("HEADRACE_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "out" / "test-artifacts" / "viewer"))
WAIT_S = 30


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("viewer-browser")
    particles = folder / "p.hrc"
    with headrace.Writer(particles, [headrace.FieldSpec("particles", "float32", 8)], chunk_size_bytes=1 << 15) as w:
        for t in range(12):
            rng = np.random.default_rng(t)
            data = rng.random((4000, 8), dtype=np.float32)
            data[:, 0] = (data[:, 0] + 0.04 * t) % 1.0  # the cloud drifts: frames differ
            data[:, 3] = 0.012
            data[:, 7] = 1.0
            w.write(w.add_frame(time=0.1 * t, bbox=((0, 0, 0), (1, 1, 1))), "particles", data)
    volume = folder / "v.hrc"
    generate_volume(volume, dims=(32, 32, 32), frames=4, seed=1)
    return particles, volume


@pytest.fixture(scope="module")
def served(files):
    viewer = ViewerServer([str(f) for f in files], device="cpu", width=320, height=240, fps=10, disk_rate=2e9)
    url = viewer.start()
    yield viewer, url
    viewer.stop()


@pytest.fixture
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(WAIT_S)
    yield driver
    driver.quit()


def _viewer(driver, key: str):
    return driver.execute_script(f"return window.headraceViewer && window.headraceViewer.{key};")


def _wait(driver, condition, what: str):
    WebDriverWait(driver, WAIT_S, poll_frequency=0.05).until(lambda d: condition(d), message=f"waited for {what}")


def _image(driver) -> np.ndarray:
    """The pixels of the image on screen (a screenshot of the #view element)."""
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(driver.find_element(By.ID, "view").screenshot_as_png)).convert("RGB")).astype(int)


def _save(driver, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def _shown(driver) -> int:
    return int(_viewer(driver, "shown") or 0)


def test_the_page_plays_scrubs_orbits_and_shows_the_engine(served, browser):
    viewer, url = served
    browser.get(url)
    _wait(browser, lambda d: _shown(d) >= 1, "the first image")
    note = browser.find_element(By.ID, "renderer-note")
    assert note.is_displayed() and "CPU reference" in note.text and "320" in note.text
    assert browser.find_element(By.ID, "frame-number").text == "0"
    _save(browser, "01-loaded")

    # Play advances the frame number.
    browser.find_element(By.ID, "play").click()
    seen: set[str] = set()
    _wait(browser, lambda d: seen.add(d.find_element(By.ID, "frame-number").text) or len(seen) >= 4, "four frame numbers")
    _wait(browser, lambda d: float((_viewer(d, "stats") or {}).get("gbps") or 0) > 0, "throughput in the panel")
    gbps = browser.find_element(By.ID, "stat-gbps").text
    assert gbps.split()[1] in ("GB/s", "MB/s") and float(gbps.split()[0]) > 0
    assert "of disk" in browser.find_element(By.ID, "stat-vs-disk").text
    assert "from cache" in browser.find_element(By.ID, "stat-cache").text
    _save(browser, "02-playing")
    browser.find_element(By.ID, "play").click()
    _wait(browser, lambda d: d.find_element(By.ID, "play").text == "Play", "pause")

    # The slider jumps to a chosen frame, and the image changes.
    browser.execute_script("""const s = document.getElementById('frame-slider');
                              s.value = 2; s.dispatchEvent(new Event('change', {bubbles: true}));""")
    _wait(browser, lambda d: d.find_element(By.ID, "frame-number").text == "2", "frame 2 on screen")
    at_two, count = _image(browser), _shown(browser)
    browser.execute_script("""const s = document.getElementById('frame-slider');
                              s.value = 9; s.dispatchEvent(new Event('change', {bubbles: true}));""")
    _wait(browser, lambda d: d.find_element(By.ID, "frame-number").text == "9" and _shown(d) > count, "frame 9 on screen")
    at_nine = _image(browser)
    assert (np.abs(at_nine - at_two).max(axis=2) > 40).mean() > 0.01, "the image did not change with the frame"
    assert browser.find_element(By.ID, "frame-time").text.startswith("0.9")
    _save(browser, "03-frame-9")

    # A drag turns the view: the pixels differ, the frame stays.
    count = _shown(browser)
    ActionChains(browser).click_and_hold(browser.find_element(By.ID, "view")).move_by_offset(90, 25).pause(0.2) \
        .move_by_offset(40, 0).release().perform()
    _wait(browser, lambda d: _shown(d) > count, "an image after the drag")
    _wait(browser, lambda d: (np.abs(_image(d) - at_nine).max(axis=2) > 40).mean() > 0.01, "the view to turn")
    assert browser.find_element(By.ID, "frame-number").text == "9"
    _save(browser, "04-orbited")

    # Reset view brings the first camera back.
    count = _shown(browser)
    browser.find_element(By.ID, "reset-view").click()
    _wait(browser, lambda d: _shown(d) > count and (np.abs(_image(d) - at_nine).max(axis=2) > 40).mean() < 0.002,
          "the view reset")

    # The particles' look: colour by x.
    count = _shown(browser)
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, "colour-by")).select_by_visible_text("x")
    _wait(browser, lambda d: (_viewer(d, "state") or {}).get("style", {}).get("colour_by") == "x" and _shown(d) > count,
          "colour by x")
    _save(browser, "05-colour-by-x")
    assert not viewer.sessions or all(s.error is None for s in viewer.sessions.values())


def test_the_page_draws_a_volume_and_its_transfer_function_editor_reaches_the_renderer(served, browser):
    from selenium.webdriver.support.ui import Select

    _, url = served
    browser.get(url)
    _wait(browser, lambda d: _shown(d) >= 1, "the first image")
    Select(browser.find_element(By.ID, "file")).select_by_index(1)
    _wait(browser, lambda d: (_viewer(d, "state") or {}).get("file") == 1 and browser.find_element(By.ID, "volume-controls").is_displayed(),
          "the volume")
    _wait(browser, lambda d: _image(d).max() > 40, "a volume image")
    before, count = _image(browser), _shown(browser)
    points = _viewer(browser, "state")["style"]["opacity"]
    # A click in the editor's upper half adds a point of high opacity.
    editor = browser.find_element(By.ID, "tf-editor")
    ActionChains(browser).move_to_element_with_offset(editor, 0, -editor.size["height"] // 4).click().perform()
    _wait(browser, lambda d: len((_viewer(d, "state") or {})["style"]["opacity"]) == len(points) + 1 and _shown(d) > count,
          "a new opacity point drawn")
    _wait(browser, lambda d: (np.abs(_image(d) - before).max(axis=2) > 30).mean() > 0.01, "a brighter volume")
    _save(browser, "06-volume-tf")
    Select(browser.find_element(By.ID, "mode")).select_by_value("iso")
    _wait(browser, lambda d: (_viewer(d, "state") or {})["style"]["mode"] == "iso", "iso mode")
    _save(browser, "07-volume-iso")


def test_paths_outside_the_served_files_are_refused(served, files, browser):
    _, url = served
    for path in ("etc/passwd", "../../etc/passwd", str(files[0]).lstrip("/"), "p.hrc", "static/"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + path)
        assert refused.value.code in (403, 404), path
    browser.get(url + "p.hrc")
    assert "404" in browser.page_source
    _save(browser, "08-refused")
