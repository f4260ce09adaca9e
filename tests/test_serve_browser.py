"""The page of ``qe serve`` in a real browser (Debian's headless Chromium driven by Selenium): paste five
pairs, score, read the table and compare it with ``qe predict``; sort; set the bands; filter; download
TSV and JSON; with a word model, the BAD words and gaps marked where ``/v1/words`` says.
``QE_SERVE_SCREENSHOT=docs/serve.png`` also writes docs/serve.md's screenshots (en-es model; and
``docs/serve-words.png`` beside it, the full servable en-de word model).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.helpers.serve import Server, en_de, qe_predict_scores, serving, word_model

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (CHROMIUM and DRIVER),
        reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; "
        "make test installs them)",
    ),
]

PAIRS = [
    ("The committee approved the new budget on Tuesday.", "El comité aprobó el nuevo presupuesto el martes."),
    ("He said that the results were encouraging.", "Dijo que los resultados eran alentadores."),
    ("Prices rose sharply last year.", "Los precios subieron fuertemente el año pasado."),
    (
        "The bridge will be closed for repairs until March.",
        "El puente estará cerrado por reparaciones hasta marzo.",
    ),
    ("Nobody expected such a quick answer.", "Nadie esperaba una respuesta tan rápida."),
]


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(downloads: Path) -> Iterator:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1280,1100")
    options.add_experimental_option(
        "prefs", {"download.default_directory": str(downloads), "download.prompt_for_download": False}
    )
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    driver.set_script_timeout(120)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def server(surface_model: Path) -> Iterator[Server]:
    with serving([surface_model]) as running:
        yield running


@pytest.fixture(scope="module")
def words_server(data_dir, tmp_path_factory) -> Iterator[Server]:
    with serving([word_model(tmp_path_factory.mktemp("words"))]) as running:
        yield running


def _wait(driver, condition, seconds: float = 120.0):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds, poll_frequency=0.1).until(lambda d: condition(d))


def _score_pasted(driver, url: str, pairs: list[tuple[str, str]]) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url)
    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#model option"))
    driver.find_element(By.ID, "src").send_keys("\n".join(s for s, _ in pairs))
    driver.find_element(By.ID, "mt").send_keys("\n".join(m for _, m in pairs))
    driver.find_element(By.ID, "score").click()
    _wait(driver, lambda d: d.find_element(By.ID, "status").text.startswith("Scored"))


def _table(driver) -> list[dict[str, str]]:
    from selenium.webdriver.common.by import By

    rows = []
    for tr in driver.find_elements(By.CSS_SELECTOR, "#table tbody tr"):
        cells = [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        rows.append(
            {
                "index": tr.get_attribute("data-index"),
                "score": tr.get_attribute("data-score"),
                "src": cells[2],
                "mt": cells[3],
                "shown": cells[4],
                "band": cells[5],
                "why": cells[6],
            }
        )
    return rows


def _wait_for_download(target: Path, seconds: float = 60.0) -> None:
    """Wait until Chromium has finished ``target``: non-empty, its size steady, no ``.crdownload`` pending.
    The name alone is not enough: a full CI run once read ``qe-scores-model.json`` there and empty."""
    deadline = time.monotonic() + seconds
    last_size = -1
    while time.monotonic() < deadline:
        pending = list(target.parent.glob("*.crdownload"))
        size = target.stat().st_size if target.is_file() else -1
        if size > 0 and size == last_size and not pending:
            return
        last_size = size
        time.sleep(0.2)
    raise AssertionError(f"{target.name} not downloaded: {sorted(p.name for p in target.parent.iterdir())}")


def _sort_by(driver, key: str) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.CSS_SELECTOR, f'#table th[data-key="{key}"] button').click()


def test_pasted_pairs_are_scored_as_qe_predict_scores_them(browser, server, surface_model, tmp_path):
    _score_pasted(browser, server.url, PAIRS)
    rows = _table(browser)
    assert [(r["src"], r["mt"]) for r in rows] == PAIRS
    assert [f"{float(r['score']):.6f}" for r in rows] == qe_predict_scores(
        surface_model, [{"src": s, "mt": m} for s, m in PAIRS], tmp_path
    )
    assert [r["shown"] for r in rows] == [f"{float(r['score']):.3f}" for r in rows]
    assert all(r["band"] in ("good", "light post-edit", "heavy post-edit") for r in rows)
    assert all("z " in r["why"] for r in rows)  # each segment's most unusual features
    assert browser.find_element("id", "status").text == "Scored 5 pairs with model"


def test_the_table_sorts_by_score_and_back(browser, server):
    _score_pasted(browser, server.url, PAIRS)
    scores = [float(r["score"]) for r in _table(browser)]
    _sort_by(browser, "score")
    assert [float(r["score"]) for r in _table(browser)] == sorted(scores)
    _sort_by(browser, "score")
    assert [float(r["score"]) for r in _table(browser)] == sorted(scores, reverse=True)
    header = browser.find_element("css selector", '#table th[data-key="score"]')
    assert header.get_attribute("aria-sort") == "descending"
    _sort_by(browser, "index")
    assert [r["index"] for r in _table(browser)] == ["0", "1", "2", "3", "4"]


def test_bands_follow_the_thresholds_the_user_sets_and_the_filter_narrows_the_table(browser, server):
    _score_pasted(browser, server.url, PAIRS)
    scores = sorted(float(r["score"]) for r in _table(browser))
    good, light = browser.find_element("id", "good-at"), browser.find_element("id", "light-at")
    for field, value in ((good, scores[3]), (light, scores[1])):  # higher is better: 2 good, 2 light, 1 heavy
        field.clear()
        field.send_keys(repr(value))
    bands = [r["band"] for r in _table(browser)]
    assert sorted(bands) == sorted(["good"] * 2 + ["light post-edit"] * 2 + ["heavy post-edit"])
    caption = browser.find_element("id", "histogram-caption").text
    assert "2 good, 2 light post-edit, 1 heavy post-edit" in caption
    assert len(browser.find_elements("css selector", "#histogram rect")) == 24
    browser.find_element("id", "filter").send_keys("precios")
    assert [r["src"] for r in _table(browser)] == ["Prices rose sharply last year."]


def test_the_scores_download_as_tsv_and_json(browser, server, downloads):
    _score_pasted(browser, server.url, PAIRS)
    shown = {int(r["index"]): r for r in _table(browser)}
    for button, name in (("download-tsv", "qe-scores-model.tsv"), ("download-json", "qe-scores-model.json")):
        target = downloads / name
        target.unlink(missing_ok=True)
        browser.find_element("id", button).click()
        _wait_for_download(target)
    lines = (downloads / "qe-scores-model.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "index\tid\tscore\tband\tsrc\tmt"
    for k, line in enumerate(lines[1:]):
        index, pair_id, score, band, src, mt = line.split("\t")
        assert (int(index), pair_id, (src, mt)) == (k, str(k + 1), PAIRS[k])
        assert float(score) == float(shown[k]["score"]) and band == shown[k]["band"]
    saved = json.loads((downloads / "qe-scores-model.json").read_text(encoding="utf-8"))
    assert saved["model"] == "model" and saved["label"]["range"] == [1.0, 5.0]
    assert [r["score"] for r in saved["results"]] == [float(shown[k]["score"]) for k in range(5)]
    assert all(len(r["unusual"]) == 3 for r in saved["results"])


def test_a_refusal_is_shown_as_its_one_line(browser, server):
    from selenium.webdriver.common.by import By

    _score_pasted(browser, server.url, PAIRS)
    browser.find_element(By.ID, "mt").send_keys("\nUna línea de más.")
    browser.find_element(By.ID, "score").click()
    error = _wait(browser, lambda d: d.find_element(By.ID, "error").text)
    assert error == "5 source lines but 6 MT lines"
    browser.execute_script(
        "arguments[0].value += arguments[1]", browser.find_element(By.ID, "src"), "\n" + "x" * 6000
    )
    browser.find_element(By.ID, "score").click()
    _wait(browser, lambda d: "characters" in d.find_element(By.ID, "error").text)
    assert browser.find_element(By.ID, "error").text.startswith("line 6: src: 6,000 characters")


@pytest.mark.skipif(
    not os.environ.get("QE_SERVE_SCREENSHOT"), reason="set QE_SERVE_SCREENSHOT=docs/serve.png"
)
def test_screenshot_for_the_serve_page(browser, data_dir):
    """The en-es model on the first 12 WMT12 test pairs, bands at 4 / 3, sorted by score."""
    model = REPO / "models" / "wmt12-en-es-fast.skops"
    if not model.is_file():
        pytest.skip("models/wmt12-en-es-fast.skops is not built (make demo)")
    src = (data_dir / "wmt12-qe" / "test_set" / "source.eng").read_text(encoding="utf-8").splitlines()
    mt = (data_dir / "wmt12-qe" / "test_set" / "target_system.spa").read_text(encoding="utf-8").splitlines()
    with serving([model]) as server:
        _score_pasted(
            browser, server.url, [(s.strip(), m.strip()) for s, m in zip(src[:12], mt[:12], strict=True)]
        )
        _sort_by(browser, "score")
        browser.execute_script("for (const t of document.querySelectorAll('textarea')) t.scrollTo(0, 0);")
        browser.set_window_size(1280, 1500)
        browser.save_screenshot(os.environ["QE_SERVE_SCREENSHOT"])


def _tag_pasted(driver, url: str, pairs: list[tuple[str, str]]) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url)
    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#model option"))
    assert "word model" in driver.find_element(By.ID, "model-info").text
    driver.find_element(By.ID, "src").send_keys("\n".join(s for s, _ in pairs))
    driver.find_element(By.ID, "mt").send_keys("\n".join(m for _, m in pairs))
    driver.find_element(By.ID, "score").click()
    _wait(driver, lambda d: d.find_element(By.ID, "status").text.startswith("Tagged"))


def _word_pairs(data_dir: Path, start: int, n: int) -> list[tuple[str, str]]:
    src, mt = en_de(data_dir, "dev", "src"), en_de(data_dir, "dev", "mt")
    return list(zip(src[start : start + n], mt[start : start + n], strict=True))


@pytest.mark.data
def test_a_word_model_highlights_the_bad_words_and_gaps(browser, words_server, data_dir):
    from selenium.webdriver.common.by import By

    pairs = _word_pairs(data_dir, 0, 6)
    _tag_pasted(browser, words_server.url, pairs)
    assert browser.find_element(By.ID, "results").get_attribute("hidden") is not None  # no score table
    status, body = words_server.call(
        "POST", "/v1/words", {"model": "words-en-de", "pairs": [{"src": s, "mt": m} for s, m in pairs]}
    )
    assert status == 200
    shown = browser.find_elements(By.CSS_SELECTOR, "#word-pairs .word-pair")
    assert len(shown) == len(pairs)
    bad_words = bad_gaps = 0
    for li, result, (src, mt) in zip(shown, body["results"], pairs, strict=True):
        assert (result["src_tokens"], result["mt_tokens"]) == (src.split(), mt.split())
        for side, tokens, tags, probabilities in (
            ("src", src.split(), result["src_tags"], result["src_bad_probability"]),
            ("mt", mt.split(), result["mt_tags"], result["mt_bad_probability"]),
        ):
            spans = li.find_elements(By.CSS_SELECTOR, f".line.{side} .tok")
            assert [span.text for span in spans] == tokens
            assert ["bad" in span.get_attribute("class").split() for span in spans] == [
                t == "BAD" for t in tags
            ]
            for span, tag, p in zip(spans, tags, probabilities, strict=True):
                assert span.get_attribute("title") == f"{tag}: BAD probability {p:.3f}"
        gaps = li.find_elements(By.CSS_SELECTOR, ".line.mt .gap")
        assert [int(g.get_attribute("data-gap")) for g in gaps] == list(range(len(mt.split()) + 1))
        marked = [int(g.get_attribute("data-gap")) for g in gaps if "bad" in g.get_attribute("class").split()]
        assert marked == [k for k, tag in enumerate(result["gap_tags"]) if tag == "BAD"]
        assert all(g.text == "‸" for g in gaps if "bad" in g.get_attribute("class").split())
        bad_words += result["mt_tags"].count("BAD")
        bad_gaps += len(marked)
    assert bad_words > 0
    assert f"{bad_words} of " in browser.find_element(By.ID, "words-shown").text
    assert f"{bad_gaps} BAD gaps" in browser.find_element(By.ID, "words-shown").text
    assert browser.find_element(By.ID, "status").text == "Tagged 6 pairs with words-en-de"


@pytest.mark.data
def test_the_page_shows_the_tokens_the_server_tagged(browser, words_server):
    """U+FEFF is whitespace to a JavaScript ``\\s`` but not to Python's ``str.split``: a page that
    split the text again would show three tokens for the server's two (and colour the wrong ones)."""
    from selenium.webdriver.common.by import By

    pairs = [("The\ufeffhouse is red .", "Das\ufeffHaus ist rot .")]
    _tag_pasted(browser, words_server.url, pairs)
    status, body = words_server.call(
        "POST", "/v1/words", {"model": "words-en-de", "pairs": [{"src": s, "mt": m} for s, m in pairs]}
    )
    assert status == 200 and body["results"][0]["mt_tokens"] == ["Das\ufeffHaus", "ist", "rot", "."]
    li = browser.find_element(By.CSS_SELECTOR, "#word-pairs .word-pair")
    for side in ("src", "mt"):
        spans = li.find_elements(By.CSS_SELECTOR, f".line.{side} .tok")
        assert [span.get_attribute("textContent") for span in spans] == body["results"][0][f"{side}_tokens"]


@pytest.mark.data
def test_a_word_request_refused_is_shown_as_its_one_line(browser, words_server):
    from selenium.webdriver.common.by import By

    _tag_pasted(browser, words_server.url, [("The house .", "Das Haus .")])
    browser.execute_script(
        "arguments[0].value = arguments[1]", browser.find_element(By.ID, "mt"), " ".join(["a"] * 2001)
    )
    browser.find_element(By.ID, "score").click()
    _wait(browser, lambda d: d.find_element(By.ID, "error").text)
    assert (
        browser.find_element(By.ID, "error").text
        == "pairs[0].mt: 2,001 tokens, more than the 2,000 a word model tags"
    )


@pytest.mark.data
@pytest.mark.skipif(
    not os.environ.get("QE_SERVE_SCREENSHOT"), reason="set QE_SERVE_SCREENSHOT=docs/serve.png"
)
def test_screenshot_for_the_word_tags(browser, data_dir, tmp_path):
    """The full servable en-de word model (configs/mlqe/en-de-words-served.toml, trained here: about a
    minute) on six MLQE-PE dev pairs, beside docs/serve.png as serve-words.png."""
    from qe.cli import main

    config = REPO / "configs" / "mlqe" / "en-de-words-served.toml"
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    model = tmp_path / "words-en-de.qwords"
    (tmp_path / "run" / "model.qwords").rename(model)
    with serving([model]) as server:
        _tag_pasted(browser, server.url, _word_pairs(data_dir, 0, 6))
        browser.execute_script("for (const t of document.querySelectorAll('textarea')) t.scrollTo(0, 0);")
        browser.set_window_size(1280, 1250)
        browser.save_screenshot(str(Path(os.environ["QE_SERVE_SCREENSHOT"]).with_name("serve-words.png")))
