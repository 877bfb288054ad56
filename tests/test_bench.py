"""hsa bench: the suites read from their packages, the pool's determinism and checks, the report's call / no-call
split, the openai backend's faults (a local stub: slow, 429, 500, malformed, unreachable) and resume."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.bench_support import StubServer, free_port, gold_answers, needs_suites, small_pool  # noqa: F401
from tests.trainers_support import tiny_model  # noqa: F401

pytestmark = needs_suites

RUN0 = {"prompts": 0, "cache_hits": 0, "asked": 0, "failed": {}, "retries": 0,
        "tokens": {"prompt": 0, "completion": 0}, "seconds": 0}


# --------------------------------------------------------------------------- suites


def test_bfcl_items_keep_every_question_and_its_accepted_answers():
    """Each category holds as many items as the package's file has lines; the gold call takes BFCL's first
    accepted value and the item keeps every accepted value; irrelevance items want no call."""
    from hsa.bench.suites import bfcl_items, package_dir

    data = package_dir("bfcl_eval", "bfcl") / "data"
    items = list(bfcl_items(["simple_python", "irrelevance"]))
    for cat in ("simple_python", "irrelevance"):
        lines = [ln for ln in (data / f"BFCL_v4_{cat}.json").read_text().splitlines() if ln.strip()]
        assert sum(it.category == cat for it in items) == len(lines)
    first = items[0]
    assert first.record["id"] == "bfcl.simple_python_0" and first.kinds == ("call",)
    call = first.record["messages"][first.turns[0]]["tool_calls"][0]["function"]
    assert call == {"name": "calculate_triangle_area", "arguments": {"base": 10, "height": 5, "unit": "units"}}
    assert first.answers[0] == [{"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}]
    irr = next(it for it in items if it.category == "irrelevance")
    assert irr.kinds == ("no_call",) and not irr.record["messages"][irr.turns[0]].get("tool_calls")


def test_agentdojo_ground_truth_is_a_real_trajectory():
    """A banking task: each ground-truth call is its own assistant turn, followed by the tool's real result in the
    suite's environment; reading twice gives the same bytes."""
    from hsa.bench.suites import agentdojo_items

    a = list(agentdojo_items(["banking"]))
    b = list(agentdojo_items(["banking"]))
    assert [x.record for x in a] == [x.record for x in b] and len(a) == 16
    t0 = a[0]
    msgs = t0.record["messages"]
    assert [msgs[i]["tool_calls"][0]["function"]["name"] for i in t0.turns] == ["read_file", "send_money"]
    assert "UK12345678901234567890" in msgs[t0.turns[0] + 1]["content"]  # the bill read from the environment
    assert msgs[t0.turns[1]]["tool_calls"][0]["function"]["arguments"]["recipient"] == "UK12345678901234567890"


# --------------------------------------------------------------------------- BFCL matching


@pytest.mark.parametrize("calls,ok", [
    ([{"name": "f", "arguments": {"a": 1, "b": "x"}}], True),
    ([{"name": "f", "arguments": {"a": 1, "b": "Y"}}], True),          # the second accepted value
    ([{"name": "f", "arguments": {"a": 1.0, "b": "x"}}], False),        # a float where the gold is an int
    ([{"name": "f", "arguments": {"a": 1, "b": "x", "c": 2}}], False),  # a parameter BFCL does not accept
    ([{"name": "f", "arguments": {"b": "x"}}], False),                  # 'a' may not be left out
    ([{"name": "f", "arguments": {"a": 1, "b": "x", "opt": 3}}], True),
    ([None], False),                                                    # a call that maps to no tool
])
def test_bfcl_accepted_values(calls, ok):
    """Any accepted value is right, "" lets a parameter be left out, nothing else may be added."""
    from hsa.bench.report import bfcl_turn_correct

    answers = [{"f": {"a": [1], "b": ["x", "Y"], "opt": ["", 3]}}]
    assert bfcl_turn_correct(answers, calls, {}, "bfcl" if calls[0] and calls[0]["arguments"].get("b") == "Y"
                             else "exact") is ok


def test_bfcl_parallel_calls_match_in_any_order_and_nested_objects():
    """Parallel gold calls match one to one in any order; an object parameter's keys hold their own lists."""
    from hsa.bench.report import bfcl_turn_correct

    answers = [{"g": {"x": [1]}}, {"g": {"x": [2], "loc": [{"city": ["Paris", "paris"], "zip": ["", "75"]}]}}]
    calls = [{"name": "g", "arguments": {"x": 2, "loc": {"city": "paris"}}}, {"name": "g", "arguments": {"x": 1}}]
    assert bfcl_turn_correct(answers, calls, {}, "exact")
    assert not bfcl_turn_correct(answers, calls[:1], {}, "exact")
    assert not bfcl_turn_correct(answers, calls + calls[1:], {}, "exact")
    schemas = {"g": {"type": "object", "properties": {"x": {"type": "number"}}}}
    assert bfcl_turn_correct([{"g": {"x": [1.0]}}], [{"name": "g", "arguments": {"x": 1}}], schemas, "exact")


# --------------------------------------------------------------------------- the pool


def test_pool_is_byte_identical_for_any_worker_count(small_pool, tmp_path):
    """The same options give the same files and sha256 again, with 2 worker processes too."""
    from hsa.bench.pool import build_pool, load_pool
    from tests.bench_support import SMALL

    card = build_pool(tmp_path / "again", parts=SMALL, k=1, limit=2, workers=2, progress=False)
    first = load_pool(small_pool)
    assert card["sha256"] == first.sha256
    for name in ("items.jsonl", "rows.jsonl.gz", "rejects.jsonl"):
        assert card["files"][name]["sha256"] == first.card["files"][name]["sha256"]
    assert "not comparable" in card["name"]  # a subset says so
    c = card["counts"]
    assert c["items"] == 10 and set(c["by_suite"]) == {"bfcl", "agentdojo"}
    assert {f for f, n in c["by_family"].items() if n["held_out"]} == {"swapped_names", "no_descriptions",
                                                                         "added_required"}
    assert c["prompts"]["no_call"] > 0 and c["prompts"]["call"] > 0


def test_pool_checks_version_and_bytes(small_pool, tmp_path):
    """A pool built by another hsa version, or changed after it was built, is refused with what to do."""
    from hsa.bench.pool import BenchError, load_pool

    copy = tmp_path / "pool"
    shutil.copytree(small_pool, copy)
    card = json.loads((copy / "bench.json").read_text())
    (copy / "bench.json").write_text(json.dumps({**card, "hsa_version": "0.0.1"}))
    with pytest.raises(BenchError, match="built by hsa 0.0.1.*Rebuild the pool"):
        load_pool(copy)
    assert load_pool(copy, allow_other_version=True).sha256 == card["sha256"]
    (copy / "bench.json").write_text(json.dumps(card))
    with open(copy / "items.jsonl", "a") as f:
        f.write("\n")
    with pytest.raises(BenchError, match="changed after it was built"):
        load_pool(copy)
    with pytest.raises(BenchError, match="not an hsa-bench pool"):
        load_pool(tmp_path)


def test_docs_block_is_written_by_the_command(small_pool, tmp_path):
    """--docs replaces the text between the markers with the card's sha256 and counts, and only that."""
    from hsa.bench.docs import END, START, write_pool_docs
    from hsa.bench.pool import load_pool

    doc = tmp_path / "b.md"
    doc.write_text(f"# Title\n\n{START}\nold numbers\n{END}\n\ntail\n")
    card = load_pool(small_pool).card
    write_pool_docs(card, doc)
    write_pool_docs(card, doc)
    text = doc.read_text()
    assert text.startswith("# Title\n\n") and text.endswith(f"{END}\n\ntail\n") and "old numbers" not in text
    assert card["sha256"] in text and text.count(START) == 1 and "| bfcl | simple_python | 2 |" in text


# --------------------------------------------------------------------------- the report


def _report(pool_path, **answer_kwargs):
    from hsa.bench.pool import load_pool
    from hsa.bench.report import build_report
    from hsa.bench.run import select_prompts

    pool = load_pool(pool_path)
    sel = select_prompts(pool)
    answers = gold_answers(pool, sel, **answer_kwargs)
    return build_report(pool, sel, answers, run=RUN0, backend={"backend": "test", "model": "gold"}, bootstrap=100)


def test_gold_answers_score_full_marks_under_every_variant(small_pool):
    """Calls written in each variant's own names, carried back with its mapping, are right everywhere."""
    rep = _report(small_pool)
    for kind in ("call_turns", "no_call_turns"):
        assert rep[kind]["canonical"]["accuracy"] == 1.0 and rep[kind]["variants"]["accuracy"] == 1.0
    assert rep["headline"]["gap"] == 0.0 and rep["call_turns"]["variants"]["n"] > 20


def test_memorised_names_open_a_gap_where_names_change(small_pool):
    """Canonical names under a renamed harness match nothing: the renaming families lose, reordering does not."""
    rep = _report(small_pool, canonical_names=True)
    fam = rep["call_turns"]["by_family"]
    assert rep["call_turns"]["canonical"]["accuracy"] == 1.0
    assert fam["tool_names"]["accuracy"] < 0.25 and fam["tool_names"]["gap"]["gap"] > 0.75  # a tool may keep its name
    assert fam["order"]["accuracy"] == 1.0 and fam["descriptions"]["accuracy"] == 1.0
    assert fam["added_required"]["accuracy"] == 0.0  # the variant's new required parameter is not given
    assert rep["headline"]["gap"] > 0.2 and rep["headline"]["ci95"][0] > 0


def test_a_model_that_never_calls_scores_zero_on_call_turns_not_half(small_pool):
    """No calls at all: 0 on call turns, 100 on no-call turns, reported apart, and counted as a problem."""
    from hsa.bench.report import summary_text

    rep = _report(small_pool, no_calls=True)
    assert rep["call_turns"]["canonical"]["accuracy"] == 0.0 and rep["call_turns"]["variants"]["accuracy"] == 0.0
    assert rep["no_call_turns"]["canonical"]["accuracy"] == 1.0
    n_call = rep["call_turns"]["canonical"]["n"] + rep["call_turns"]["variants"]["n"]
    assert rep["problems"]["no_call_on_call_turns"]["n"] == n_call
    assert "no call on call turns" in summary_text(rep)


# --------------------------------------------------------------------------- the openai backend: faults and resume


def _run(pool, url, out, **kw):
    from hsa.bench.client import OpenAIBackend
    from hsa.bench.run import run_bench

    opts = {"max_retries": kw.pop("max_retries", 2), "timeout": kw.pop("timeout", 10.0), "backoff": 0.01,
            "concurrency": kw.pop("concurrency", 2)}
    backend = OpenAIBackend("stub", url, **opts)
    try:
        return run_bench(pool, backend, out=out, categories=["simple_python", "irrelevance"],
                         families=["tool_names"], bootstrap=50, progress=False, plot=False, **kw)
    finally:
        backend.close()


def test_retries_after_429_and_500_are_counted_and_answers_cached(small_pool, tmp_path):
    """429 (Retry-After 0) and 500 are retried; the answers are cached, so a rerun asks nothing."""
    plan = [("status", 429, {"retry-after": "0"}), ("status", 500), ("ok", "no call here")]
    with StubServer(plan) as stub:
        rep = _run(small_pool, stub.url, tmp_path / "r")
        n = rep["n_prompts"]
        assert rep["run"]["retries"] == 2 and rep["run"]["asked"] == n and stub.posts == n + 2
        assert rep["problems"]["request_failed"]["n"] == 0
        again = _run(small_pool, stub.url, tmp_path / "r")
        assert again["run"]["cache_hits"] == n and again["run"]["asked"] == 0 and stub.posts == n + 2
        assert json.dumps(again["call_turns"]) == json.dumps(rep["call_turns"])


def test_failures_are_counted_never_cached_and_asked_again(small_pool, tmp_path):
    """A server that keeps failing (500), answers garbage or too slowly: each prompt is a counted, named
    failure, scored wrong, and not cached; the next run asks for exactly those prompts again."""
    for case, (plan, error, kw) in enumerate((([("status", 500)], "http_500", {}),
                            ([("raw", b"<html>oops</html>")], "malformed_response", {}),
                            ([("raw", b'{"choices": []}')], "malformed_response", {}),
                            ([("sleep", 1.5)], "timeout", {"timeout": 0.3, "max_retries": 0}))):
        out = tmp_path / str(case)
        with StubServer(plan) as stub:
            rep = _run(small_pool, stub.url, out, **kw)
        n = rep["n_prompts"]
        failed = rep["problems"]["request_failed"]
        assert failed["n"] == n and failed["by_error"][error]["n"] == n, (error, failed)
        assert rep["call_turns"]["canonical"]["accuracy"] == 0.0
        with StubServer([("ok", "fine")]) as stub:
            rep2 = _run(small_pool, stub.url, out)
            assert rep2["run"]["cache_hits"] == 0 and stub.posts == n


def test_unreachable_server_is_one_clear_error(small_pool, tmp_path, capsys):
    """Nothing listens at --base-url: exit 2, a message that says what to check, no report."""
    from hsa.cli import main

    url = f"http://127.0.0.1:{free_port()}/v1"
    rc = main(["bench", "run", str(small_pool), "--backend", "openai", "--model", "m", "--base-url", url,
               "--out", str(tmp_path / "o"), "--max-retries", "0", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot reach the server" in err and "curl" in err
    assert not (tmp_path / "o" / "report.json").exists()


def test_stopped_run_resumes_without_asking_again(small_pool, tmp_path):
    """A run stopped after some answers keeps them; the next run asks only for the others (hits counted)."""
    from hsa.bench.client import OpenAIBackend
    from hsa.bench.run import run_bench

    class Stopping(OpenAIBackend):
        def complete(self, work):
            for n, pair in enumerate(super().complete(work)):
                if n == 3:
                    raise KeyboardInterrupt
                yield pair

    with StubServer([("ok", None)]) as stub:
        b = Stopping("stub", stub.url, concurrency=1)
        with pytest.raises(KeyboardInterrupt):
            run_bench(small_pool, b, out=tmp_path / "r", categories=["simple_python", "irrelevance"],
                      families=["tool_names"], progress=False, plot=False, bootstrap=10)
        b.close()
        asked_first = stub.posts
        rep = _run(small_pool, stub.url, tmp_path / "r")
    assert rep["run"]["cache_hits"] == 3 and stub.posts - asked_first == rep["n_prompts"] - 3


def test_cli_options_are_checked_before_anything_runs(small_pool, tmp_path, capsys, monkeypatch):
    """--backend openai without --base-url, an unset --api-key-env, a pool of another hsa version: one line each."""
    from hsa.cli import main

    base = ["bench", "run", str(small_pool), "--model", "m", "--out", str(tmp_path / "o"), "--quiet"]
    assert main(base + ["--backend", "openai"]) == 2
    assert "needs --base-url" in capsys.readouterr().err
    monkeypatch.delenv("HSA_TEST_NO_KEY", raising=False)
    assert main(base + ["--backend", "openai", "--base-url", "http://127.0.0.1:1/v1", "--api-key-env",
                        "HSA_TEST_NO_KEY"]) == 2
    assert "HSA_TEST_NO_KEY" in capsys.readouterr().err
    copy = tmp_path / "pool"
    shutil.copytree(small_pool, copy)
    card = json.loads((copy / "bench.json").read_text())
    (copy / "bench.json").write_text(json.dumps({**card, "hsa_version": "9.9"}))
    with StubServer([("ok", "x")]) as stub:
        rc = main(["bench", "run", str(copy), "--model", "m", "--out", str(tmp_path / "o"), "--quiet",
                   "--backend", "openai", "--base-url", stub.url])
    assert rc == 2 and "built by hsa 9.9" in capsys.readouterr().err


def test_tools_in_prompt_is_the_text_of_the_bundled_template():
    """Tools rendered into the prompt, then a plain ChatML template, give exactly what hsa_chatml_tools.jinja
    renders for the same conversation with native tools (so a local model and a served one see one text)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    from hsa.bench.client import tools_in_prompt_messages
    from trainers.common import bundled_path

    tools = [{"type": "function", "function": {"name": "get_w", "description": "Weather.", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Paris and Rome?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": "get_w", "arguments": {"city": "Paris"}}},
                    {"type": "function", "function": {"name": "get_w", "arguments": {"city": "Rome"}}}]},
                {"role": "tool", "content": "sunny"}, {"role": "tool", "content": "rain"}]
    template = bundled_path("hsa_chatml_tools.jinja").read_text()
    chatml = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
              "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    want = render_jinja_template([messages], tools=tools, chat_template=template, add_generation_prompt=True)[0][0]
    got = render_jinja_template([tools_in_prompt_messages(messages, tools)], chat_template=chatml,
                                add_generation_prompt=True)[0][0]
    assert got == want


def test_eval_run_takes_the_openai_backend(tmp_path, capsys):
    """`hsa eval run --backend openai` asks the server once per prompt, scores its messages, and a rerun answers
    from the cache (the server is not asked again)."""
    from hsa.cli import main
    from tests.trainers_support import augment_first

    data = augment_first(3, tmp_path / "shards")
    with StubServer([("status", 503, {"retry-after": "0"}), ("ok", "I will not call anything.")]) as stub:
        args = ["eval", "run", str(data), "--backend", "openai", "--model", "m", "--base-url", stub.url,
                "--turns", "calls", "--out", str(tmp_path / "r.json"), "--bootstrap", "10"]
        assert main(args) == 0
        first = stub.posts
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["n_predictions"] == report["n_prompts"] == first - 1 > 0
        assert report["canonical"]["call_accuracy"] == 0.0 and report["problems"]["missing"]["n"] == 0
        assert main(args) == 0 and stub.posts == first
    assert "answers from the cache" in capsys.readouterr().err


def test_build_command_prints_the_sha256_and_refuses_a_full_folder(tmp_path, capsys):
    """`hsa bench build` prints `sha256 <hex>` on standard output (what bench.json holds); a second build into
    the same folder is refused unless --overwrite, which gives the same sha256."""
    from hsa.cli import main

    args = ["bench", "build", "--out", str(tmp_path / "b"), "--suite", "bfcl", "--categories", "simple_python",
            "--limit", "2", "--k", "1", "--families", "order", "param_names", "--quiet"]
    assert main(args) == 0
    out = capsys.readouterr().out.strip()
    card = json.loads((tmp_path / "b" / "bench.json").read_text())
    assert out == f"sha256 {card['sha256']}" and card["parts"]["bfcl"] == ["simple_python"]
    assert main(args) == 2 and "--overwrite" in capsys.readouterr().err
    assert main(args + ["--overwrite"]) == 0 and capsys.readouterr().out.strip() == out
    assert main(args[:-1] + ["--categories", "nope", "--overwrite"]) == 2
    assert "neither a BFCL category" in capsys.readouterr().err


def test_parts_name_the_suites_read(tmp_path):
    """build_pool(parts={"bfcl": [...]}) reads BFCL only, as `--categories simple_python` does (before, every
    AgentDojo suite came along: the served-model test's 19-prompt pool held 122 prompts)."""
    from hsa.bench.pool import build_pool

    card = build_pool(tmp_path / "p", parts={"bfcl": ["simple_python"]}, limit=1, k=1, families=["order"],
                      progress=False)
    assert list(card["counts"]["by_suite"]) == ["bfcl"] and card["counts"]["items"] == 1
    assert list(card["parts"]) == ["bfcl"]


def test_progress_goes_to_a_log_as_lines(tmp_path, capsys):
    """Not on a terminal (a log, nohup, CI), `hsa bench build` and `hsa bench run` still report progress: whole
    lines (no carriage returns), a last one with the count; --quiet (progress=False) prints none."""
    from hsa.bench.pool import build_pool
    from hsa.bench.run import _Progress

    build_pool(tmp_path / "p", parts={"bfcl": ["simple_python"]}, limit=2, k=1, families=["order"])
    err = capsys.readouterr().err
    assert "hsa bench build: 2/2 items" in err and "\r" not in err
    build_pool(tmp_path / "q", parts={"bfcl": ["simple_python"]}, limit=2, k=1, families=["order"], progress=False)
    assert capsys.readouterr().err == ""
    bar = _Progress(3, 1, "lines", every=0.0)
    for _ in range(3):
        bar.update({"ok": True, "usage": {"prompt_tokens": 10, "completion_tokens": 2}}, 0)
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3 and lines[-1].startswith("hsa bench run: 3/3 asked (1 cached)") and "30 in / 6 out" in lines[-1]


def test_transformers_backend_runs_and_caches(small_pool, tiny_model, tmp_path):
    """`hsa bench run --backend transformers` with a tiny local model: every prompt answered and scored, token
    counts reported, and a rerun generates nothing (all cache hits)."""
    from hsa.cli import main

    args = ["bench", "run", str(small_pool), "--backend", "transformers", "--model", str(tiny_model), "--out",
            str(tmp_path / "r"), "--categories", "simple_python", "irrelevance", "--families", "order",
            "--max-new-tokens", "8", "--device", "cpu", "--bootstrap", "10", "--quiet", "--no-plot"]
    assert main(args) == 0
    rep = json.loads((tmp_path / "r" / "report.json").read_text())
    assert rep["run"]["asked"] == rep["n_prompts"] > 0 and rep["run"]["tokens"]["completion"] > 0
    assert rep["backend"]["backend"] == "transformers" and rep["problems"]["request_failed"]["n"] == 0
    assert main(args) == 0
    again = json.loads((tmp_path / "r" / "report.json").read_text())
    assert again["run"]["cache_hits"] == rep["n_prompts"] and again["run"]["asked"] == 0
    assert again["call_turns"] == rep["call_turns"]


def test_compare_pairs_reports_on_the_same_pool_only(small_pool, tmp_path):
    """--compare: this minus the other on shared prompts, per kind of turn; a report on another pool is refused."""
    from hsa.bench.pool import BenchError, load_pool
    from hsa.bench.report import build_report
    from hsa.bench.run import select_prompts

    pool = load_pool(small_pool)
    sel = select_prompts(pool)
    good = build_report(pool, sel, gold_answers(pool, sel), run=RUN0, backend={"model": "a"}, bootstrap=50)
    worse = build_report(pool, sel, gold_answers(pool, sel, canonical_names=True), run=RUN0, backend={"model": "b"},
                         bootstrap=50, compare=good)
    p = worse["paired"]
    assert p["call_turns"]["difference"] < 0 and p["no_call_turns"]["difference"] == 0.0
    assert p["only_here"] == p["only_there"] == 0
    with pytest.raises(BenchError, match="same pool"):
        build_report(pool, sel, gold_answers(pool, sel), run=RUN0, backend={}, bootstrap=10,
                     compare={**good, "pool_sha256": "0" * 64})


# --------------------------------------------------------------------------- report.html


def _page_claims(html: str, rep: dict) -> None:
    """The page is self-contained and carries the numbers of ``rep`` (report.json)."""
    import re

    from hsa.bench.report import fmt_ci, fmt_pct, fmt_points

    fetches = re.findall(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", html, flags=re.I)
    assert fetches == [] and "@import" not in html and "url(http" not in html
    assert "default-src 'none'" in html  # the page's policy refuses any request
    assert rep["pool_sha256"] in html and rep["benchmark"] in html and str(rep["backend"]["model"]) in html
    h = rep["headline"]
    assert f"{fmt_points(h['gap'])} points, 95% CI {fmt_ci(h['ci95'], True)}" in html
    for kind in ("call_turns", "no_call_turns"):
        blk = rep[kind]
        for group in ("canonical", "variants", "seen", "held_out"):
            g = blk[group]
            if g["n"]:
                assert f"<td>{fmt_pct(g['accuracy'])}</td><td>{fmt_ci(g['ci95'])}</td><td>{g['n']}</td>" in html
        for name, g in {**blk["by_family"], **blk["by_transform"]}.items():
            assert f"<td>{fmt_pct(g['accuracy'])}</td><td>{fmt_ci(g['ci95'])}</td><td>{g['n']}</td><td>" \
                   f"{fmt_points(g['gap']['gap'])}</td><td>{fmt_ci(g['gap']['ci95'], True)}</td>" in html, name
        for name in blk["by_category"]:
            assert f"<td>{name}</td>" in html


def test_run_writes_a_self_contained_page_of_its_report(small_pool, tmp_path):
    """hsa bench run writes report.html beside report.json: no request, the report's numbers, wrong prompts and why."""
    from hsa.report.browser import BrowserError, Chromium, find_chromium

    with StubServer([("ok", "no call here")]) as stub:
        rep = _run(small_pool, stub.url, tmp_path / "r")
    page = tmp_path / "r" / "report.html"
    html = page.read_text(encoding="utf-8")
    saved = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    _page_claims(html, saved)
    assert saved["call_turns"]["variants"]["accuracy"] == 0.0 and saved["no_call_turns"]["canonical"]["n"] > 0
    wrong = sorted(r["id"] for r in rep["results"] if not r["correct"])
    assert wrong and f'id="p-{wrong[0]}"' in html
    assert "reply instead of call</b>: no call: the gold turn calls" in html  # the stub never calls a tool
    assert "no call here" in html  # the model's answer, as it came
    if find_chromium() is None:
        return  # the browser half needs Chromium (apt-get install chromium); tests/test_report_page.py says so too
    try:
        browser = Chromium()
    except BrowserError as e:
        pytest.skip(f"Chromium did not start: {e}")
    with browser:
        tab = browser.open(page, wait="document.readyState === 'complete'")  # a page without JavaScript
        try:
            assert tab.evaluate("document.querySelectorAll('svg.chart').length") >= 2
            assert tab.console_errors == [] and tab.requests == [page.resolve().as_uri()]
        finally:
            tab.close()


def test_page_says_why_memorised_names_are_wrong(small_pool, tmp_path):
    """Canonical names under renamed tools: the page's sampled prompts name the renamed-away tool and its new name."""
    from hsa.bench.page import PAGE_WRONG, prompt_details
    from hsa.bench.pool import load_pool
    from hsa.bench.report import build_report, write_bench_report
    from hsa.bench.run import select_prompts

    pool = load_pool(small_pool)
    sel = select_prompts(pool, families=["tool_names"])
    answers = gold_answers(pool, sel, canonical_names=True)
    rep = build_report(pool, sel, answers, run=RUN0, backend={"backend": "test", "model": "memorised"}, bootstrap=50)
    details = prompt_details(sel, answers, rep["results"])
    write_bench_report(rep, tmp_path, png=False, prompts=details)
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    _page_claims(html, rep)
    wrong = [d for d in details if not d["result"]["correct"]]
    assert 0 < len(wrong) <= PAGE_WRONG and all(d["reasons"] for d in wrong)
    assert all(not d["reasons"] for d in details if d["result"]["correct"])
    assert any(k == "renamed-away name" for d in wrong for k, _ in d["reasons"])
    assert "renamed-away name</b>: called `" in html
