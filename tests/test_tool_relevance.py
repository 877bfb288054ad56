"""Issue 16 items 7 and 8: distractors are irrelevant to every real tool, and description rewrites keep meaning,
grammar and rules, on hand-written harnesses of several domains (tests/harness_cases.py)."""

from __future__ import annotations

import json
import re
import random

import pytest

from tests.harness_cases import AIRLINE, ALL, CODING, LIVE, RETAIL, record, tool
from transforms import tool as T
from transforms import tool_functional
from transforms._banks import load_banks
from transforms._domains import harness_domain, relevance, RELEVANCE_THRESHOLD

# --------------------------------------------------------------------------- item 7: distractors


def test_search_flights_is_near_search_direct_flights():
    """The issue's case: "search flights between two airports on a date" is near "search direct flights"."""
    bank = {t["name"]: t for t in load_banks(())["tools"]}
    real = AIRLINE["tools"][0]["function"]
    assert relevance(bank["search_flights"], real) >= RELEVANCE_THRESHOLD
    assert relevance(bank["play_music"], real) < RELEVANCE_THRESHOLD


def test_no_distractor_is_near_a_real_tool_on_any_harness():
    """Over many draws on airline, retail, coding and live-commerce harnesses, no added tool is near a real one:
    search_flights never joins the airline harness, get_weather_forecast never joins a weather harness."""
    weather = {"id": "w", "tools": [tool("get_weather", "Current weather conditions in a city.",
                                         {"city": {"type": "string"}}, ["city"])],
               "messages": [{"role": "user", "content": "Weather in Oslo?"}]}
    for name, raw in [*ALL.items(), ("weather", weather)]:
        src = record(raw)
        real = {t["name"] for t in src["tools"]}
        added = set()
        for seed in range(60):
            params = T.Distractors(n=(3, 6)).sample(src, random.Random(seed))
            if isinstance(params, dict):
                for e in params["tools"]:
                    added.add(e["tool"]["name"])
                    assert max(relevance(e["tool"], t) for t in src["tools"]) < RELEVANCE_THRESHOLD, (name, e)
        assert added and not added & real
        if name == "airline":
            assert "search_flights" not in added
        if name == "weather":
            assert "get_weather_forecast" not in added


def test_other_domain_candidates_are_drawn_first(tmp_path):
    """With a pool of one same-domain and one other-domain irrelevant tool and n=1, the other domain's is taken."""
    pool = tmp_path / "pool.jsonl"
    pool.write_text("\n".join(json.dumps(t) for t in [
        {"name": "get_seat_map", "domain": "airline", "description": "Seat map of an aircraft type.",
         "parameters": {"type": "object", "properties": {"aircraft": {"type": "string"}}}},
        {"name": "play_song", "domain": "music", "description": "Play a song.",
         "parameters": {"type": "object", "properties": {"title": {"type": "string"}}}}]) + "\n")
    src = record(AIRLINE)
    assert harness_domain(src) == "airline"
    picked = {T.Distractors(n=1, pool_file=str(pool)).sample(src, random.Random(s))["tools"][0]["tool"]["name"]
              for s in range(20)}
    assert picked == {"play_song"}


def test_a_pool_of_near_tools_is_skipped_with_the_reason(tmp_path):
    """When every candidate is near a real tool, the transform skips and says so."""
    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps([{"name": "search_flights", "description": "Search flights between two airports "
                                 "on a date.", "parameters": {"type": "object", "properties": {
                                     "origin": {"type": "string"}, "destination": {"type": "string"},
                                     "date": {"type": "string"}}}}]))
    out = T.Distractors(n=1, pool_file=str(pool)).sample(record(AIRLINE), random.Random(0))
    assert isinstance(out, T.Skip) and "near a real tool" in out.reason


def test_distractor_params_are_not_near_a_real_parameter():
    """An optional distractor parameter whose name shares a word with one of the tool's parameters is not added
    (format beside output_format)."""
    src = record({"id": "f", "tools": [tool("export_report", "Export a report.",
                                             {"output_format": {"type": "string"}}, [])],
                  "messages": [{"role": "user", "content": "export"}]})
    names = set()
    for seed in range(80):
        p = T.Distractors(n=0, params_p=1.0).sample(src, random.Random(seed))
        if isinstance(p, dict):
            names |= {e["name"] for e in p["params"]}
    assert names and "format" not in names


# --------------------------------------------------------------------------- item 8: descriptions


@pytest.mark.parametrize("domain", sorted(ALL))
def test_harness_domains_are_detected(domain):
    """Each hand-written harness is detected as its own domain; meta.domain overrides the vote."""
    assert harness_domain(record(ALL[domain])) == domain
    assert harness_domain({**record(ALL[domain]), "meta": {"domain": "telecom"}}) == "telecom"
    assert harness_domain(record({"id": "x", "tools": [tool("ping", "Ping.", {})], "messages": [
        {"role": "user", "content": "hi"}]})) is None


def _paraphrases(text: str, domain: str | None, n: int = 60) -> set[str]:
    return {T.paraphrase(text, random.Random(s), domain=domain) for s in range(n)}


def test_number_of_never_becomes_how_many_inside_a_noun_phrase():
    """"The number of bags" may become "The count of bags", never "The how many bags"; at the start of a
    description "Number of days" may become "How many days"."""
    outs = _paraphrases("The number of bags in the reservation.", "airline")
    assert "The count of bags in the reservation." in outs
    assert not any("how many" in o.lower() for o in outs)
    assert "How many days to forecast." in _paraphrases("Number of days to forecast.", None)
    assert _paraphrases("The viewer count of the live room.", "live_commerce") == {
        "The viewer count of the live room."}  # "count of" ends a longer noun phrase here
    assert _paraphrases("Decide how many bags to add.", None) == {"Decide how many bags to add."}


def test_verb_groups_swap_only_in_verb_position():
    """A verb group swaps the first word of a sentence only, and not when it is the subject ("Returns are")."""
    assert _paraphrases("Returns are accepted within 30 days.", "retail") == {"Returns are accepted within 30 days."}
    outs = _paraphrases("Returns the file contents. Ask before you get more.", "coding")
    assert "Provides the file contents. Ask before you get more." in outs
    assert all(o.endswith("you get more.") for o in outs)


def test_articles_agree_and_noun_phrases_stay_whole():
    """"a summary" becomes "an overview" (never "a overview"); "the weather forecast" is not split."""
    outs = _paraphrases("Get a summary of the order.", None)
    assert any("an overview of the order" in o for o in outs)
    assert not any("a overview" in o for o in outs)
    assert not any("conditions forecast" in o for o in _paraphrases("Get the weather forecast for a city.", None))
    assert any("weather conditions in" in o for o in _paraphrases("Get the weather in a city.", None))


def test_a_domain_bank_applies_only_on_its_domain():
    """The live-commerce bank (user -> viewer/shopper) never reaches an airline, retail or coding harness, and does
    reach a live-commerce one; tool.describe detects the domain from the record."""
    text = "Transfer the user to a human agent, with a summary of the user's issue."
    for domain in ("airline", "coding", None):
        assert not any(w in o for o in _paraphrases(text, domain) for w in ("viewer", "shopper", "customer"))
    assert not any(w in o for o in _paraphrases(text, "retail") for w in ("viewer", "shopper"))
    assert any("shopper" in o for o in _paraphrases("List the coupons a viewer can claim.", "live_commerce"))
    for name, raw in ALL.items():
        src = record(raw)
        for seed in range(40):
            params = T.Describe(p=1.0, modes=("paraphrase",)).sample(src, random.Random(seed))
            if not isinstance(params, dict):
                continue
            new = " ".join(e["text"] for e in params["texts"])
            if name != "live_commerce":
                assert "viewer" not in new and "shopper" not in new, (name, new)


def test_shorten_never_drops_a_rule():
    """Shortening keeps every sentence and clause with a constraint: "Only transfer if the user explicitly
    asks" stays; a clause that opens with "if" is never cut off."""
    desc = AIRLINE["tools"][2]["function"]["description"]
    short = T.shorten(desc, 8)
    assert "Only transfer if the user explicitly asks" in short
    assert T.shorten("Transfer the user to a human agent, if the user asks for one.", 6) == \
        "Transfer the user to a human agent, if the user asks for one."
    assert T.shorten("Reads a file. The file_path parameter must be an absolute path. Lines are numbered.", 4) == \
        "Reads a file. The file_path parameter must be an absolute path."
    assert T.shorten("Get a product. It has a name. It has a price.", 8) == "Get a product."
    for name, raw in ALL.items():
        src = record(raw)
        for seed in range(20):
            params = T.Describe(p=1.0, modes=("shorten",)).sample(src, random.Random(seed))
            for e in params["texts"] if isinstance(params, dict) else ():
                old = next(t for tl, at, t in tool_functional.descriptions(src) if tl == e["tool"] and at == e["at"])
                rules = [s for s in re.split(r"(?<=[.;!?])\s+", old) if T.has_constraint(s)]
                assert all(s.rstrip(".;") in e["text"] for s in rules), (old, e["text"])
