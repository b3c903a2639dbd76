"""Times how long headless Chromium takes to load and render an HTML report.

Usage: html_load.py CHROMIUM CHROMEDRIVER PAGE.html [RUNS]

Loads the page RUNS times (default 5) and prints, per load, the time from navigation start until
the page's script has inflated its data and built the runs table (the `data-ready` attribute it
sets), the number of table rows rendered, then the best and median. Part of bench/html.sh.
"""

import pathlib
import statistics
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def main():
    chromium, chromedriver, page = sys.argv[1:4]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    url = pathlib.Path(page).resolve().as_uri()
    times = []
    try:
        for _ in range(runs):
            driver.get("about:blank")
            driver.get(url)
            ready = WebDriverWait(driver, 120).until(
                lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready")
            )
            ms = float(ready)
            rows = driver.execute_script("return document.querySelectorAll('#runs-body tr').length")
            times.append(ms)
            print(f"load {ms:.0f} ms, {rows} rows rendered")
    finally:
        driver.quit()
    print(f"best {min(times):.0f} ms, median {statistics.median(times):.0f} ms")


if __name__ == "__main__":
    main()
