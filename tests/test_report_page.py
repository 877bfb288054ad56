"""The page of ``hsa report`` in a real headless Chromium, driven over its DevTools protocol (one browser for the
module): no console error, no request, the variant browser, the evaluation view, keys and URL fragments.

Chromium comes from the system (Debian: ``apt-get install chromium``; ``make test`` installs it when missing) or
``HSA_CHROMIUM``; without one these tests skip and say why.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from hsa.report import write_report
from hsa.report.browser import BrowserError, Chromium, find_chromium
from hsa.report.diff import apply_ops
from tests.report_support import evaluated  # noqa: F401

pytestmark = pytest.mark.skipif(find_chromium() is None, reason="no Chromium: apt-get install chromium (make test "
                                "installs it when it can) or set HSA_CHROMIUM to a Chromium binary")


@pytest.fixture(scope="module")
def browser():
    try:
        b = Chromium()
    except BrowserError as e:  # installed but unable to start here (a broken install, no /dev/shm ...): say so
        pytest.skip(f"Chromium did not start: {e}")
    with b:
        yield b


@pytest.fixture(scope="module")
def page_file(evaluated, tmp_path_factory):  # noqa: F811
    return write_report(evaluated.data, tmp_path_factory.mktemp("page") / "report.html", evals=[evaluated.report],
                        predictions=[evaluated.predictions], command="hsa report (test)")


def _text(page, selector: str) -> str:
    return page.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{}}).innerText || ''")


def test_every_view_opens_without_an_error_or_a_request(browser, page_file):
    """Overview, plots, variants and evaluation render; the console is clean and the only request is the file."""
    page = browser.open(page_file)
    try:
        for view in ("overview", "plots", "variants", "eval"):
            page.evaluate(f"location.hash = {json.dumps(view)}")
            page.wait_until(f"document.getElementById({json.dumps(view)}).classList.contains('active')")
        assert page.evaluate("document.querySelectorAll('#plots svg.chart').length") >= 4
        assert page.evaluate("document.querySelectorAll('#eval svg.chart').length") >= 2
        assert page.console_errors == []
        assert page.requests == [page_file.resolve().as_uri()]
        # the policy is what keeps it so: a request the page tried would be refused (and logged)
        page.evaluate("fetch('https://example.com/x').catch(() => 0)")
        page.wait_until("true")
        assert page.requests == [page_file.resolve().as_uri()]
        assert any("Content Security Policy" in e for e in page.console_errors)
    finally:
        page.close()
    # a link to a view opens it at the top of the page (the header and its sample note in sight), tabs included
    page = browser.open(page_file, fragment="plots")
    try:
        page.wait_until("document.readyState === 'complete'")
        page.wait_until("scrollY === 0 && document.getElementById('plots').classList.contains('active')")
        assert _text(page, "#tabs a.active") == "Plots"
    finally:
        page.close()


def test_the_variant_browser_shows_a_renamed_tool(browser, page_file, evaluated):  # noqa: F811
    """The known row's tool shows its old name struck out and its new name inserted, and the mapping table row."""
    canon, new = evaluated.renamed
    page = browser.open(page_file, fragment="variant=" + quote(evaluated.renamed_row, safe=""))
    try:
        assert _text(page, "#variant-title") == evaluated.renamed_row
        key = json.dumps(f"tools/{canon}")
        head = page.evaluate(f"[...document.querySelector('.part[data-key={key}] .head').querySelectorAll('del, ins')]"
                             ".map(e => e.tagName + ':' + e.textContent)")
        assert head == [f"DEL:{canon}", f"INS:{new}"]
        sides = page.evaluate(f"[...document.querySelectorAll('.part[data-key={key}] .sides > div')]"
                              ".map(d => [...d.querySelectorAll('del, ins')].map(e => e.textContent.trim()))")
        assert canon in sides[0] and new in sides[1]  # in the diff itself: struck on the left, inserted on the right
        rows = page.evaluate("[...document.querySelectorAll('#mapping-table tbody tr')].map(r => [...r.cells]"
                             ".map(c => c.textContent))")
        assert ["tool", "", canon, new] in rows
        # long names and params scroll inside the variant's panel: the page itself is no wider than the window
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        # every changed part, its folds opened, reads exactly the source text and the variant text
        page.evaluate("document.querySelectorAll('.fold').forEach(f => f.click())")
        assert page.evaluate("document.querySelectorAll('.fold').length") == 0
        shown = page.evaluate("[...document.querySelectorAll('.part[data-status=changed]')].map(p => [p.dataset.key,"
                              " ...[...p.querySelectorAll('.sides > div')].map(d => d.textContent)])")
        data = json.loads(page.evaluate("document.getElementById('hsa-data').textContent"))
        source = next(s for s in data["sources"] if any(v["id"] == evaluated.renamed_row for v in s["variants"]))
        variant = next(v for v in source["variants"] if v["id"] == evaluated.renamed_row)
        ops = {it["key"]: it["ops"] for it in variant["items"] if it["status"] == "changed"}
        assert len(shown) == len(ops) > 3
        for key, left, right in shown:
            assert left == source["fields"][key] and right == apply_ops(source["fields"][key], ops[key]), key
        assert page.console_errors == []
    finally:
        page.close()


def test_the_evaluation_view_lists_the_wrong_prompt_and_why(browser, page_file, evaluated):  # noqa: F811
    """Filtered to wrong prompts, the known one is listed with its reason; opened, it shows what the model wrote."""
    canon, new = evaluated.renamed
    page = browser.open(page_file, fragment="eval")
    try:
        page.evaluate("const s = document.getElementById('filter-outcome'); s.value = 'wrong';"
                      "s.dispatchEvent(new Event('change'))")
        rows = page.evaluate("[...document.querySelectorAll('#prompt-table tr.row')].map(r => [r.dataset.id, "
                             "r.querySelector('td.reason').textContent])")
        assert [evaluated.wrong_prompt, f"called `{canon}`, the canonical name of a tool this variant renamed to "
                                        f"`{new}`"] in [list(r) for r in rows]
        assert all(not pid.split("#")[0].endswith("/0") for pid, _ in rows)  # the canonical rows are all right
        page.evaluate(f"location.hash = 'prompt=' + encodeURIComponent({json.dumps(evaluated.wrong_prompt)})")
        page.wait_until("document.querySelector('tr.detail-row')")
        detail = _text(page, "tr.detail-row")
        for words in ("Gold calls (this variant's names)", new, "Raw completion", "Parsed calls", "Mapped back",
                      "(does not map back)", "renamed-away name"):
            assert words in detail, words
        assert page.console_errors == []
    finally:
        page.close()


def test_keys_and_fragments_walk_variants_and_wrong_prompts(browser, page_file, evaluated):  # noqa: F811
    """j moves to the next variant and changes the fragment; n opens the next wrong prompt; a link reopens a view."""
    page = browser.open(page_file, fragment="variant=" + quote(evaluated.renamed_row, safe=""))
    try:
        page.press("j")
        page.wait_until(f"document.getElementById('variant-title').textContent !== {json.dumps(evaluated.renamed_row)}")
        after = _text(page, "#variant-title")
        assert page.evaluate("decodeURIComponent(location.hash)") == f"#variant={after}"
        page.press("k")
        page.wait_until(f"document.getElementById('variant-title').textContent === {json.dumps(evaluated.renamed_row)}")
        page.press("n")
        page.wait_until("document.querySelector('tr.detail-row')")
        first_wrong = page.evaluate("decodeURIComponent(location.hash)")
        assert first_wrong.startswith("#prompt=") and "✗" in _text(page, "tr.row.active")
        page.press("n")
        page.wait_until(f"decodeURIComponent(location.hash) !== {json.dumps(first_wrong)}")
        assert page.console_errors == []
    finally:
        page.close()


def test_dark_mode_changes_the_colours(browser, page_file):
    """prefers-color-scheme: dark gives a dark background and light text (the plots use the same variables)."""
    light = browser.open(page_file)
    dark = browser.open(page_file, color_scheme="dark")
    try:
        style = "getComputedStyle(document.documentElement).backgroundColor"
        assert light.evaluate(style) == "rgb(255, 255, 255)"
        assert dark.evaluate(style) == "rgb(20, 23, 28)"
        fill = "getComputedStyle(document.querySelector('#plots svg text')).fill"
        assert light.evaluate(fill) != dark.evaluate(fill)
    finally:
        light.close()
        dark.close()
