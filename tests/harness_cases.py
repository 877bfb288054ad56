"""Hand-written harnesses of several domains (input format, every one valid), for the tests of issue 16
items 7-9: airline and retail customer service (a long policy prompt, ``think`` / ``calculate`` tools),
a coding agent (Claude Code style plain-word tools), and live commerce.

Written for these tests; no dataset file was copied.
"""

from __future__ import annotations

import copy
import json

__all__ = ["AIRLINE", "RETAIL", "CODING", "LIVE", "ALL", "record", "tool"]


def tool(name: str, description: str, properties: dict, required: list[str] | None = None) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required or []}}}


def _call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


_S = {"type": "string"}
_I = {"type": "integer"}

AIRLINE = {
    "id": "airline-1",
    "tools": [
        tool("search_direct_flight", "Search direct flights between two cities on a specific date.",
             {"origin": {"type": "string", "description": "The origin city airport in three letters, such as 'JFK'."},
              "destination": {"type": "string", "description": "The destination city airport in three letters."},
              "date": {"type": "string", "description": "The date of the flight in the format 'YYYY-MM-DD'."}},
             ["origin", "destination", "date"]),
        tool("update_reservation_baggages", "Update the baggage information of a reservation.",
             {"reservation_id": {"type": "string", "description": "The reservation ID, such as 'ZFA04Y'."},
              "total_baggages": {"type": "integer", "description": "The number of bags in the reservation."},
              "payment_id": {"type": "string", "description": "The payment id stored in user profile."}},
             ["reservation_id", "total_baggages", "payment_id"]),
        tool("transfer_to_human_agents",
             "Transfer the user to a human agent, with a summary of the user's issue. Only transfer if the user "
             "explicitly asks for a human agent, or if the user's issue cannot be resolved by the agent with the "
             "available tools.",
             {"summary": {"type": "string", "description": "A summary of the user's issue."}}, ["summary"]),
        tool("think", "Use the tool to think about something. It will not obtain new information or change the "
                      "database, but just append the thought to the log.",
             {"thought": {"type": "string", "description": "A thought to think about."}}, ["thought"]),
    ],
    "messages": [
        {"role": "system", "content": "# Airline Agent Policy\nYou can help users book, modify, or cancel flight "
                                      "reservations. You must not make up flights. Only one tool call at a time."},
        {"role": "user", "content": "Is there a direct flight from JFK to SEA on 2024-05-20? Also add a bag to ZFA04Y."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call("c1", "search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"})]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps([{"flight_number": "HAT069", "status": "available",
                                                                      "origin": "JFK", "destination": "SEA"}])},
        {"role": "assistant", "content": "", "tool_calls": [
            _call("c2", "update_reservation_baggages",
                  {"reservation_id": "ZFA04Y", "total_baggages": 2, "payment_id": "credit_card_1"})]},
        {"role": "tool", "tool_call_id": "c2", "content": json.dumps({"reservation_id": "ZFA04Y",
                                                                     "total_baggages": 2})},
        {"role": "assistant", "content": "HAT069 flies direct; your reservation now has 2 bags."},
    ],
}

RETAIL = {
    "id": "retail-1",
    "tools": [
        tool("get_order_details", "Get the status and details of an order.",
             {"order_id": {"type": "string", "description": "The order id, such as '#W0000000'."}}, ["order_id"]),
        tool("return_delivered_order_items",
             "Return some items of a delivered order. The order status will be changed to 'return requested'. "
             "The agent needs to explain the return detail and ask for explicit user confirmation (yes) to proceed.",
             {"order_id": {"type": "string", "description": "The order id."},
              "item_ids": {"type": "array", "items": _S, "description": "The item ids to be returned."},
              "payment_method_id": {"type": "string", "description": "The payment method id to pay or receive "
                                                                     "refund for the item price difference."}},
             ["order_id", "item_ids", "payment_method_id"]),
        tool("find_user_id_by_email", "Find user id by email. If the user is not found, the function will return "
                                      "an error message.",
             {"email": {"type": "string", "description": "The email of the user, such as 'something@example.com'."}},
             ["email"]),
        tool("calculate", "Calculate the result of a mathematical expression.",
             {"expression": {"type": "string", "description": "The mathematical expression to calculate, such as "
                                                                "'2 + 2'. The expression can contain numbers, "
                                                                "operators (+, -, *, /), parentheses, and spaces."}},
             ["expression"]),
    ],
    "messages": [
        {"role": "system", "content": "# Retail agent policy\nAs a retail agent, you can help users cancel or modify "
                                      "pending orders, return or exchange delivered orders. Do not proceed unless "
                                      "the user confirms."},
        {"role": "user", "content": "I want to return the lamp from order #W2378156, my email is yusuf@example.com."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call("r1", "find_user_id_by_email", {"email": "yusuf@example.com"})]},
        {"role": "tool", "tool_call_id": "r1", "content": "yusuf_rossi_9620"},
        {"role": "assistant", "content": "", "tool_calls": [_call("r2", "get_order_details", {"order_id": "#W2378156"})]},
        {"role": "tool", "tool_call_id": "r2", "content": json.dumps({"order_id": "#W2378156", "status": "delivered"})},
        {"role": "assistant", "content": "", "tool_calls": [
            _call("r3", "return_delivered_order_items", {"order_id": "#W2378156", "item_ids": ["4983901480"],
                                                        "payment_method_id": "credit_card_9513926"})]},
        {"role": "tool", "tool_call_id": "r3", "content": json.dumps({"status": "return requested"})},
        {"role": "assistant", "content": "The return is requested."},
    ],
}

CODING = {
    "id": "coding-1",
    "tools": [
        tool("Bash", "Executes a given bash command in a persistent shell session. Do not use it to read files: "
                     "use Read instead.",
             {"command": {"type": "string", "description": "The command to execute"},
              "timeout": {"type": "number", "description": "Optional timeout in milliseconds (max 600000)"}},
             ["command"]),
        tool("Read", "Reads a file from the local filesystem. The file_path parameter must be an absolute path.",
             {"file_path": {"type": "string", "description": "The absolute path to the file to read"},
              "limit": {"type": "number", "description": "The number of lines to read."}}, ["file_path"]),
        tool("Grep", "A search tool built on ripgrep. Supports full regex syntax.",
             {"pattern": {"type": "string", "description": "The regular expression pattern to search for in file "
                                                            "contents"},
              "path": {"type": "string", "description": "File or directory to search in."}}, ["pattern"]),
    ],
    "messages": [
        {"role": "system", "content": "You are a coding agent working in a git repository."},
        {"role": "user", "content": "Where is parse_config defined?"},
        {"role": "assistant", "content": "", "tool_calls": [_call("g1", "Grep", {"pattern": "def parse_config"})]},
        {"role": "tool", "tool_call_id": "g1", "content": "src/config.py:12:def parse_config(path):"},
        {"role": "assistant", "content": "", "tool_calls": [_call("g2", "Read", {"file_path": "/repo/src/config.py"})]},
        {"role": "tool", "tool_call_id": "g2", "content": "def parse_config(path):\n    ..."},
        {"role": "assistant", "content": "In src/config.py, line 12."},
    ],
}

LIVE = {
    "id": "live-1",
    "tools": [
        tool("get_live_room_info", "Get the live room's title, host, viewer count and the link being presented.",
             {"room_id": {"type": "string", "description": "The live room id"}}, ["room_id"]),
        tool("list_coupons", "List the coupons a viewer can claim for a product. Never list coupons of another room.",
             {"product_id": {"type": "string", "description": "The product the user asks about"},
              "user_level": {"type": "string", "enum": ["new", "member", "vip"]}}, ["product_id"]),
    ],
    "messages": [
        {"role": "system", "content": "You are the AI host of a live stream. Answer viewers' questions about the "
                                      "products on the shelf."},
        {"role": "user", "content": "Any coupons for the blue kettle?"},
        {"role": "assistant", "content": "", "tool_calls": [_call("l1", "list_coupons", {"product_id": "p-77"})]},
        {"role": "tool", "tool_call_id": "l1", "content": json.dumps([{"coupon_id": "c5", "off": 10}])},
        {"role": "assistant", "content": "Yes: coupon c5 takes 10 off."},
    ],
}

ALL = {"airline": AIRLINE, "retail": RETAIL, "coding": CODING, "live_commerce": LIVE}


def record(raw: dict):
    """A normalised deep copy of ``raw``."""
    from hsa.records import normalize

    return normalize(copy.deepcopy(raw))
