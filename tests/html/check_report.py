"""Drives a real headless Chromium over an HTML report written by `looptrace report -f html`.

Usage: check_report.py MODE CHROMIUM CHROMEDRIVER PAGE.html REPORT.json [SCREENSHOT.png]

REPORT.json is `looptrace report -f json` of the same traces. In every MODE the page must show
each exit reason's count as the JSON has it, a click on a filter must narrow the runs table and a
click on a run must open its timeline. MODE `planted` (the page of
tests/fixtures/report/html/planted.jsonl) also checks that the planted markup in its run id, tool
name, task and content (an <img onerror>, <script> elements) shows as text and never runs; MODE
`replay` that a diverged run's timeline marks its first divergence. Prints `ok` and exits 0, or
prints what failed and exits 1.
"""

import json
import pathlib
import sys
from urllib.parse import quote

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

PLANTED_RUN = "<script>window.pwned='run id'</script>"
PLANTED_TOOL = "<img src=x onerror=\"window.pwned='tool';document.title='pwned'\">"


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def rows(driver):
    return driver.find_elements(By.CSS_SELECTOR, "#runs-body tr")


def main():
    mode, chromium, chromedriver, page, report_json = sys.argv[1:6]
    screenshot = sys.argv[6] if len(sys.argv) > 6 else None
    expected = json.loads(pathlib.Path(report_json).read_text())
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    try:
        driver.get(pathlib.Path(page).resolve().as_uri())
        # The script inflates the embedded data, then builds the table and marks the page ready.
        WebDriverWait(driver, 60).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready")
        )
        total = expected["exit_reasons"]["runs"]
        # The chart states its denominator and shows every exit reason's count from the JSON.
        heading = driver.find_element(By.CSS_SELECTOR, "#exit-reasons h2").text
        check(f"of {total} run" in heading, f"exit-reason heading {heading!r} lacks the denominator {total}")
        for row in expected["exit_reasons"]["rows"]:
            reason, runs = row["exit_reason"], row["runs"]
            shown = driver.find_element(
                By.CSS_SELECTOR, f"svg .clickable[data-exit-reason='{reason}'] text.count"
            ).text
            check(shown.split(" ")[0] == str(runs), f"{reason}: page shows {shown!r}, JSON has {runs}")
        check(len(rows(driver)) == total, f"table has {len(rows(driver))} rows, expected {total}")

        # A click on an exit reason in the chart narrows the table to those runs.
        narrowed = next(r for r in expected["exit_reasons"]["rows"] if 0 < r["runs"] < total)
        driver.find_element(
            By.CSS_SELECTOR, f"svg .clickable[data-exit-reason='{narrowed['exit_reason']}']"
        ).click()
        shown = rows(driver)
        check(len(shown) == narrowed["runs"], f"filter {narrowed['exit_reason']}: {len(shown)} rows")
        check(
            all(r.get_attribute("data-exit-reason") == narrowed["exit_reason"] for r in shown),
            "the filtered table holds runs of another exit reason",
        )
        driver.find_element(By.ID, "clear-filters").click()
        check(len(rows(driver)) == total, "clearing the filters does not bring every run back")

        # A click on a run opens its timeline, which names it.
        first = rows(driver)[0]
        run_id = first.find_element(By.CSS_SELECTOR, ".run-id").text
        first.click()
        timeline = driver.find_element(By.ID, "timeline")
        check(timeline.is_displayed(), "the timeline did not open")
        check(f"Timeline of {run_id}" in timeline.text, "the timeline does not name its run")
        # The address names the open run; opening that address opens it again.
        check("#run=" in driver.current_url, f"the address does not name the run: {driver.current_url}")
        last = rows(driver)[-1].find_element(By.CSS_SELECTOR, ".run-id").text
        driver.get(pathlib.Path(page).resolve().as_uri() + "#run=" + quote(last, safe=""))
        driver.refresh()
        WebDriverWait(driver, 60).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready")
        )
        timeline = driver.find_element(By.ID, "timeline")
        check(timeline.is_displayed(), "#run=ID did not open the run")
        check(f"Timeline of {last}" in timeline.text, f"#run=ID opened another run: {timeline.text[:80]!r}")
        if mode == "planted":
            planted(driver)
        elif mode == "replay":
            replay(driver)
        if screenshot:
            driver.save_screenshot(screenshot)
    finally:
        driver.quit()
    print("ok")


def replay(driver):
    """A diverged run's timeline says where it diverged and marks that step."""
    verdict = Select(driver.find_element(By.ID, "filter-verdict"))
    verdict.select_by_visible_text("diverged")
    diverged = len(rows(driver))
    check(diverged > 0, "no diverged run in the table")
    # Opening a timeline redraws the table: rows are found again each time.
    for i in range(diverged):
        rows(driver)[i].click()
        timeline = driver.find_element(By.ID, "timeline")
        check("first divergence from the recording at step" in timeline.text, "no divergence said")
        marked = timeline.find_elements(By.CSS_SELECTOR, "tr.diverged")
        check(marked, "no event marked as diverged")
        check(len(timeline.find_elements(By.ID, "first-divergence")) == 1, "first divergence unmarked")
    Select(driver.find_element(By.ID, "filter-verdict")).select_by_visible_text("faithful")
    for i in range(len(rows(driver))):
        rows(driver)[i].click()
        timeline = driver.find_element(By.ID, "timeline")
        check(not timeline.find_elements(By.CSS_SELECTOR, "tr.diverged"), "a faithful run is marked")


def planted(driver):
    """The planted markup of tests/fixtures/report/html/planted.jsonl shows as text, never runs."""
    # The tool filter lists the planted tool name as text and narrows the table to its run.
    tool = Select(driver.find_element(By.ID, "filter-tool"))
    check(PLANTED_TOOL in [o.text for o in tool.options], "the planted tool name is not an option")
    tool.select_by_visible_text(PLANTED_TOOL)
    shown = rows(driver)
    check(len(shown) == 1, f"tool filter: {len(shown)} rows, expected 1")
    check(shown[0].find_element(By.CSS_SELECTOR, ".run-id").text == PLANTED_RUN, "wrong run kept")

    # A click on the run opens its timeline, where every planted string is plain text.
    shown[0].click()
    timeline = driver.find_element(By.ID, "timeline")
    check(timeline.is_displayed(), "the timeline did not open")
    text = timeline.text
    check(PLANTED_RUN in text, "the timeline does not name the run")
    check(PLANTED_TOOL in text, "the timeline does not show the tool name as text")
    check("<script>window.pwned='content'</script>" in text, "observation content not shown as text")
    check("division by zero" in text and "division_by_zero" in text, "tool error missing")
    events = timeline.find_elements(By.CSS_SELECTOR, "tbody tr")
    check(len(events) == 6, f"the timeline shows {len(events)} events, the run has 6")

    # Summary capture shows the summary, never text it does not hold.
    Select(driver.find_element(By.ID, "filter-tool")).select_by_index(0)
    row = next(r for r in rows(driver) if r.find_element(By.CSS_SELECTOR, ".run-id").text == "ok-2")
    row.click()
    text = driver.find_element(By.ID, "timeline").text
    check("chars=1;sha256=4b227777d4dd" in text, "summary capture does not show its summary")

    # Nothing planted ran, and nothing was loaded from anywhere.
    check(driver.execute_script("return window.pwned === undefined"), "planted script ran")
    check(driver.title == "looptrace report", f"title changed to {driver.title!r}")
    check(driver.execute_script("return document.images.length") == 0, "an <img> was created")
    scripts = driver.execute_script("return document.scripts.length")
    check(scripts == 2, f"{scripts} script elements, the page has 2")
    loaded = driver.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; })"
    )
    check(loaded == [], f"the page loaded {loaded}")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as err:
        print(f"FAIL: {err}")
        sys.exit(1)
