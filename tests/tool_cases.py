"""Hand-written records for the tool-family tests (input format, every one valid).

``SHOP``: OpenAI dialect, nested object, array of objects with a nested object, string
enums (one identifier-like value mentioned in text), a number default a call uses,
``$ref``/``$defs``, ``anyOf``, parallel calls, multi-turn tool results, skills, a
prompt and a hook. ``STRICT``: OpenAI strict mode everywhere. ``ANTHROPIC`` and ``MCP``:
the other dialects (MCP with dotted names).
"""

from __future__ import annotations

import copy
import json

__all__ = ["SHOP", "STRICT", "ANTHROPIC", "MCP", "ALL", "record"]


def _call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


SHOP = {
    "id": "shop-1",
    "tools": [
        {"type": "function", "function": {
            "name": "search_products",
            "description": "Search the catalogue by keyword; use get_order_status for orders.",
            "parameters": {"type": "object", "properties": {
                "query": {"type": "string", "description": "Keywords"},
                "price_range": {"type": "object", "description": "Price bounds",
                                "properties": {"min": {"type": "number"}, "max": {"type": "number"}},
                                "required": ["min"], "additionalProperties": False},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 7},
                "in_stock": {"type": "boolean", "default": False},
            }, "required": ["query"]}}},
        {"type": "function", "function": {
            "name": "get_order_status",
            "description": "Look up an order by its order_id.",
            "parameters": {"type": "object", "properties": {
                "order_id": {"type": "string", "pattern": "^LS[0-9]{4}$"},
                "detail": {"type": "string", "enum": ["brief", "full_history"], "default": "brief"},
            }, "required": ["order_id"], "additionalProperties": False}}},
        {"type": "function", "function": {
            "name": "batch_ship",
            "description": "Ship several items at once.",
            "parameters": {"type": "object", "properties": {
                "items": {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
                    "sku_code": {"type": "string"},
                    "pack": {"type": "object", "properties": {"gift_wrap": {"type": "boolean"},
                                                             "note_text": {"type": "string"}}},
                }, "required": ["sku_code"]}},
                "speed": {"type": "string", "enum": ["standard", "same_day"]},
                "cost": {"$ref": "#/$defs/money"},
                "ref_code": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            }, "required": ["items"], "$defs": {"money": {"type": "object", "properties": {
                "amount": {"type": "number"}, "currency": {"type": "string", "enum": ["CNY", "USD"]}},
                "required": ["amount"]}}}}},
        {"type": "function", "function": {
            "name": "load_skill", "description": "Load a skill by name.",
            "parameters": {"type": "object", "properties": {"skill": {"type": "string"}}, "required": ["skill"]}}},
    ],
    "skills": [{"name": "order_help", "description": "Help with orders.",
                "content": "Call get_order_status first, then answer briefly."}],
    "prompt": {"sections": [{"id": "rules", "title": "Rules",
                             "body": "Use search_products for products. same_day shipping costs extra."}]},
    "hooks": [{"name": "guard", "event": "pre_tool_use", "entry": "check",
               "source": "def check(payload):\n    if payload['tool_name'] == 'get_order_status' and "
                         "not payload['tool_input'].get('order_id'):\n"
                         "        return {'decision': 'retry', 'message': 'Ask for the order_id.'}\n"
                         "    return {'decision': 'allow'}\n"}],
    "messages": [
        {"role": "system", "content": "You are a shop assistant. Rules: use search_products for products."},
        {"role": "user", "content": "Find linen trousers under 300 and check order LS1234."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call("c1", "search_products", {"query": "linen trousers", "price_range": {"min": 0, "max": 300},
                                            "limit": 7, "in_stock": True}),
            _call("c2", "get_order_status", {"order_id": "LS1234", "detail": "full_history"})]},
        {"role": "tool", "tool_call_id": "c1", "name": "search_products", "content": "{\"results\": [\"P1\"]}"},
        {"role": "tool", "tool_call_id": "c2", "name": "get_order_status", "content": "{\"status\": \"shipped\"}"},
        {"role": "assistant", "content": "", "tool_calls": [_call("c3", "load_skill", {"skill": "order_help"})]},
        {"role": "tool", "tool_call_id": "c3", "name": "load_skill", "content": "Call get_order_status first."},
        {"role": "assistant", "content": "Found P1; your order shipped. Want same_day shipping for the trousers?"},
        {"role": "user", "content": "Yes, ship two, one gift wrapped."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call("c4", "batch_ship", {"items": [{"sku_code": "P1-M", "pack": {"gift_wrap": True, "note_text": "hi"}},
                                                 {"sku_code": "P1-L"}],
                                       "speed": "same_day", "cost": {"amount": 12.5, "currency": "CNY"},
                                       "ref_code": 2010})]},
        {"role": "tool", "tool_call_id": "c4", "name": "batch_ship", "content": "{\"ok\": true}"},
        {"role": "assistant", "content": "Done: both ship same_day."},
    ],
}

_STRICT_ADDRESS = {"type": "object", "properties": {
    "city": {"type": "string"}, "district": {"type": ["string", "null"]}},
    "required": ["city", "district"], "additionalProperties": False}

STRICT = {
    "id": "strict-1",
    "tools": [
        {"type": "function", "function": {
            "name": "calculate_shipping", "strict": True, "description": "Shipping cost to an address.",
            "parameters": {"type": "object", "properties": {
                "product_id": {"type": "string"},
                "address": _STRICT_ADDRESS,
                "express": {"type": ["string", "null"], "enum": ["standard", "express", None]},
                "quantity": {"type": ["integer", "null"]},
            }, "required": ["product_id", "address", "express", "quantity"], "additionalProperties": False}}},
        {"type": "function", "function": {
            "name": "list_orders", "strict": True, "description": "List a user's orders.",
            "parameters": {"type": "object", "properties": {
                "user_id": {"type": "string"},
                "filters": {"type": "array", "items": {"type": "object", "properties": {
                    "field": {"type": "string", "enum": ["status", "date"]}, "value": {"type": "string"}},
                    "required": ["field", "value"], "additionalProperties": False}},
                "page": {"type": ["integer", "null"]},
            }, "required": ["user_id", "filters", "page"], "additionalProperties": False}}},
        {"type": "function", "function": {
            "name": "cancel_order", "strict": True, "description": "Cancel an order.",
            "parameters": {"type": "object", "properties": {
                "order_id": {"type": "string"}, "reason": {"type": ["string", "null"]}},
                "required": ["order_id", "reason"], "additionalProperties": False}}},
    ],
    "messages": [
        {"role": "user", "content": "Ship P7 to Hangzhou and list my shipped orders, then cancel LS9."},
        {"role": "assistant", "content": None, "tool_calls": [
            _call("s1", "calculate_shipping", {"product_id": "P7", "address": {"city": "Hangzhou", "district": None},
                                               "express": None, "quantity": 1}),
            _call("s2", "list_orders", {"user_id": "u1", "filters": [{"field": "status", "value": "shipped"}],
                                        "page": None})]},
        {"role": "tool", "tool_call_id": "s1", "content": "{\"cost\": 8}"},
        {"role": "tool", "tool_call_id": "s2", "content": "{\"orders\": [\"LS9\"]}"},
        {"role": "assistant", "content": None, "tool_calls": [
            _call("s3", "cancel_order", {"order_id": "LS9", "reason": None})]},
        {"role": "tool", "tool_call_id": "s3", "content": "{\"cancelled\": true}"},
        {"role": "assistant", "content": "Shipping is 8; LS9 is cancelled."},
    ],
}

ANTHROPIC = {
    "id": "anthropic-1",
    "tools": [
        {"name": "get_weather", "description": "Current weather for a city.",
         "input_schema": {"type": "object", "properties": {
             "city": {"type": "string"}, "units": {"type": "string", "enum": ["metric", "imperial"]},
             "extras": {"type": "object", "properties": {"wind": {"type": "boolean"}, "hours": {"type": "integer"}}}},
             "required": ["city"]}},
        {"name": "get_forecast_days", "description": "Forecast for the next days.",
         "input_schema": {"type": "object", "properties": {
             "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 10}},
             "required": ["city", "days"]}},
    ],
    "messages": [
        {"role": "user", "content": "Weather in Paris now and for 3 days?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a1", "type": "function", "function": {"name": "get_weather", "arguments": {
                "city": "Paris", "units": "metric", "extras": {"wind": False, "hours": 6}}}},
            {"id": "a2", "type": "function", "function": {"name": "get_forecast_days",
                                                          "arguments": {"city": "Paris", "days": 3}}}]},
        {"role": "tool", "tool_call_id": "a1", "content": "18C"},
        {"role": "tool", "tool_call_id": "a2", "content": "sunny"},
        {"role": "assistant", "content": "18C now, sunny for 3 days."},
    ],
}

MCP = {
    "id": "mcp-1",
    "tools": [
        {"name": "fs.read_file", "description": "Read a file.",
         "inputSchema": {"type": "object", "properties": {
             "path": {"type": "string"}, "range": {"type": "object", "properties": {
                 "start_line": {"type": "integer"}, "end_line": {"type": "integer"}}}},
             "required": ["path"]}},
        {"name": "fs.write_file", "description": "Write a file; fs.read_file it first.",
         "inputSchema": {"type": "object", "properties": {
             "path": {"type": "string"}, "text": {"type": "string"}, "mode": {"type": "string", "enum": ["w", "a"]}},
             "required": ["path", "text"]}},
    ],
    "messages": [
        {"role": "user", "content": "Append a line to notes.md after reading lines 1-3."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "m1", "type": "function", "function": {"name": "fs.read_file", "arguments": {
                "path": "notes.md", "range": {"start_line": 1, "end_line": 3}}}}]},
        {"role": "tool", "tool_call_id": "m1", "content": "a\nb\nc"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "m2", "type": "function", "function": {"name": "fs.write_file", "arguments": {
                "path": "notes.md", "text": "d", "mode": "a"}}}]},
        {"role": "tool", "tool_call_id": "m2", "content": "ok"},
        {"role": "assistant", "content": "Appended."},
    ],
}

ALL = {"shop": SHOP, "strict": STRICT, "anthropic": ANTHROPIC, "mcp": MCP}


def record(name: str) -> dict:
    """A fresh deep copy of the hand-written record ``name``."""
    return copy.deepcopy(ALL[name])
