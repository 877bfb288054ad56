"""Issue 16 items 7 and 8: distractors are irrelevant to every real tool, and description rewrites keep meaning,
grammar and rules, on hand-written harnesses of several domains (tests/harness_cases.py)."""

from __future__ import annotations

import json
import random

import pytest

from tests.harness_cases import AIRLINE, ALL, CODING, LIVE, RETAIL, record, tool
from transforms import tool as T
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
