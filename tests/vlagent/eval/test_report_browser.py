"""The report in a real headless Chromium (Debian's ``chromium`` + ``chromium-driver``, driven
by Selenium): opens from file:// with no network, no console errors, table cells hold the
JSON's numbers, → advances the viewer's step and ↓ its episode, and a screenshot is saved as
the test artifact (its path is printed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_report_fixtures import EVAL_SUMMARY, eval_dir, samples_dir, train_dir

from vlagent.eval.report import write_report

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def _driver(profile: Path):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (pip install 'vlagent[web]')")
    if not CHROMIUM or not CHROMEDRIVER:
        pytest.skip("chromium / chromedriver not found (apt-get install chromium chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 f"--user-data-dir={profile}", "--window-size=1280,1400"):  # fmt: skip
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def test_report_in_headless_chromium(tmp_path):
    run = eval_dir(tmp_path / "run")
    train_dir(run)
    samples_dir(run)
    index = write_report(run, tmp_path / "report")
    driver = _driver(tmp_path / "profile")  # skips when selenium / chromium is missing
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    try:
        driver.get(index.resolve().as_uri())
        errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
        assert errors == [], errors

        # tables hold the JSON's numbers
        cells = driver.find_elements(By.CSS_SELECTOR, '#overall tr[data-key="success_rate"] td')
        assert float(cells[1].get_attribute("data-value")) == EVAL_SUMMARY["success_rate"]
        assert cells[1].text == f"{100 * EVAL_SUMMARY['success_rate']:.1f} %"
        assert float(cells[2].get_attribute("data-value")) == EVAL_SUMMARY["success_ci_low"]
        table = json.loads((run / "eval_table.json").read_text())["tables"]["domain"]
        mobile = driver.find_elements(
            By.CSS_SELECTOR, '#screenspot-domain tr[data-key="mobile"] td'
        )
        assert mobile[1].text == f"{100 * table['cells']['mobile']['text']['accuracy']:.1f} % (1/1)"

        # the viewer: → next step, ↓ next episode, filters
        viewer = driver.find_element(By.ID, "viewer")
        body = driver.find_element(By.TAG_NAME, "body")
        assert (viewer.get_attribute("data-episode"), viewer.get_attribute("data-step")) == (
            "0",
            "0",
        )
        assert driver.find_element(By.ID, "step-image").get_attribute("naturalWidth") != "0"
        assert len(driver.find_elements(By.CSS_SELECTOR, "#viewer .point")) == 1
        for _ in range(3):
            body.send_keys(Keys.ARROW_DOWN)
        assert viewer.get_attribute("data-episode") == "3"  # the first apps episode (2 steps)
        body.send_keys(Keys.ARROW_RIGHT)
        assert viewer.get_attribute("data-step") == "1"
        assert driver.find_element(By.ID, "step-text").text == "done"
        body.send_keys(Keys.ARROW_RIGHT)  # stays on the last step
        assert viewer.get_attribute("data-step") == "1"
        body.send_keys(Keys.ARROW_LEFT)
        assert viewer.get_attribute("data-step") == "0"
        body.send_keys("k")
        assert viewer.get_attribute("data-episode") == "2"
        driver.find_element(By.ID, "failed-only").click()
        body.send_keys("j")
        assert viewer.get_attribute("data-episode") == "4"  # the failed apps episode
        driver.execute_script("document.getElementById('viewer').scrollIntoView()")
        shot = tmp_path / "report_screenshot.png"
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        print(f"\nscreenshot of the report: {shot}")
        errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
        assert errors == [], errors
    finally:
        driver.quit()
