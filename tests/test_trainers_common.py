"""The trainers' shared parts: the parser, dataset loading, chat conversion, model checks and the tiny model."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tests.trainers_support import ROOT, shards, tiny_model  # noqa: F401  (pytest fixtures)

from trainers.common import (
    LoraArguments,
    ModelArguments,
    RunArguments,
    TrainerInputError,
    iter_rows,
    load_tokenizer,
    parse_args,
    resolve_model_path,
    to_chat,
    trl_config,
)


def _parse(argv):
    return parse_args(argv, "prog", "test", [ModelArguments, RunArguments, LoraArguments],
                      defaults={"per_device_train_batch_size": 4})


def test_help_is_instant_and_imports_no_torch():
    """--help of every stage prints the options without importing torch, transformers or trl."""
    code = ("import sys, contextlib, io\n"
            "import trainers.sft, trainers.rl, trainers.distill, trainers.eval\n"
            "for m in (trainers.sft, trainers.rl, trainers.distill, trainers.eval):\n"
            "    buf = io.StringIO()\n"
            "    with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):\n"
            "        m._parse(['--help'])\n"
            "    assert '--model_name_or_path' in buf.getvalue() and '--config' in buf.getvalue()\n"
            "heavy = [m for m in ('torch', 'transformers', 'trl', 'datasets') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_config_file_then_cli_flags(tmp_path):
    """YAML sets defaults, CLI flags override them; unknown names are kept for the trl config."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model_name_or_path: from-yaml\nlearning_rate: 0.001\nuse_peft: true\nwarmup_steps: 7\n")
    model, run, lora, extras = _parse(["--config", str(cfg), "--learning_rate", "0.5", "--lora_r", "4",
                                       "--max_grad_norm", "-1", "--bf16", "false"])
    assert model.model_name_or_path == "from-yaml"
    assert run.learning_rate == 0.5 and run.bf16 is False and run.per_device_train_batch_size == 4
    assert lora.use_peft is True and lora.lora_r == 4
    assert extras.from_config == {"warmup_steps": 7}
    assert extras.from_cli == ["--max_grad_norm", "-1"]  # negative values are values, not flags


def test_trl_config_gets_typed_extras_and_rejects_unknown(tmp_path):
    """Extras reach the trl config typed; names that are not trl fields are reported, YAML and CLI alike."""
    from trl import SFTConfig

    cfg = tmp_path / "c.yaml"
    cfg.write_text("warmup_steps: 7\n")
    _, run, _, extras = _parse(["--config", str(cfg), "--output_dir", str(tmp_path / "o"), "--max_grad_norm=0.3",
                                "--bf16", "false"])
    config = trl_config(SFTConfig, run, {"max_length": 64}, extras, 2e-5)
    assert (config.warmup_steps, config.max_grad_norm, config.max_length) == (7, 0.3, 64)
    assert config.learning_rate == 2e-5 and config.use_cpu and not config.gradient_checkpointing
    _, run, _, extras = _parse(["--output_dir", "o", "--max_grad_nrom", "0.3"])
    with pytest.raises(TrainerInputError, match="Unknown arguments: --max_grad_nrom"):
        trl_config(SFTConfig, run, {}, extras, 2e-5)
    cfg.write_text("warmup_stepz: 7\n")
    _, run, _, extras = _parse(["--config", str(cfg), "--output_dir", "o"])
    with pytest.raises(TrainerInputError, match="Unknown arguments from config file"):
        trl_config(SFTConfig, run, {}, extras, 2e-5)


def test_iter_rows_reads_shards_and_jsonl(shards, tmp_path):  # noqa: F811
    """A shard folder and a JSONL file both give plain dict rows; JSON columns come back as objects."""
    rows = list(iter_rows(str(shards)))
    manifest = json.loads((shards / "manifest.json").read_text())
    assert len(rows) == manifest["counts"]["rows_written"] >= 4 and {r["variant"] for r in rows} == {0, 1}
    assert isinstance(rows[1]["mapping"], dict) and isinstance(rows[0]["messages"], list)
    src = tmp_path / "in.jsonl"
    src.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n\n{"messages": []}\n')
    assert len(list(iter_rows(str(src)))) == 2
    assert len(list(iter_rows(str(shards), max_rows=2))) == 2


def test_iter_rows_reads_json_arrays_and_parquet(tmp_path):
    """A JSON array file, pretty-printed records and a Parquet file (JSON-text columns) give the same chats."""
    import datasets

    rows = [{"id": f"r{i}", "messages": [{"role": "user", "content": f"hi {i}"},
                                         {"role": "assistant", "content": "hello"}]} for i in range(3)]
    (tmp_path / "a.json").write_text(json.dumps(rows, indent=2))
    (tmp_path / "b.json").write_text("".join(json.dumps(r, indent=2) + "\n" for r in rows))
    datasets.Dataset.from_list([{"id": r["id"], "messages": json.dumps(r["messages"])} for r in rows]).to_parquet(
        str(tmp_path / "c.parquet"))
    for name in ("a.json", "b.json", "c.parquet"):
        chats = [to_chat(r)["messages"] for r in iter_rows(str(tmp_path / name))]
        assert chats == [r["messages"] for r in rows], name
    (tmp_path / "d.json").write_text('[{"messages": []},\n {"messages": [}]')
    with pytest.raises(TrainerInputError, match="d.json:2"):
        list(iter_rows(str(tmp_path / "d.json")))


def test_iter_rows_errors(tmp_path):
    """Missing paths, folders that are not datasets and bad JSON lines are clear errors."""
    with pytest.raises(FileNotFoundError, match="does not exist"):
        list(iter_rows(str(tmp_path / "nope.jsonl")))
    with pytest.raises(TrainerInputError, match="not a saved dataset"):
        list(iter_rows(str(tmp_path)))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": []}\n{oops\n')
    with pytest.raises(TrainerInputError, match="bad.jsonl:2"):
        list(iter_rows(str(bad)))



def test_iter_rows_reads_one_split_of_a_folder_of_splits(tmp_path):
    """A DatasetDict folder gives the rows of --dataset_split; a split it lacks is an error naming the splits."""
    import datasets

    rows = {name: [{"messages": [{"role": "user", "content": f"{name} {i}"}]} for i in range(n)]
            for name, n in (("train", 3), ("test", 2))}
    datasets.DatasetDict({k: datasets.Dataset.from_list(v) for k, v in rows.items()}).save_to_disk(str(tmp_path / "dd"))
    got = list(iter_rows(str(tmp_path / "dd"), split="test"))
    assert [r["messages"][0]["content"] for r in got] == ["test 0", "test 1"]
    with pytest.raises(TrainerInputError, match=r"has splits \['test', 'train'\], not 'dev'; pass --dataset_split"):
        list(iter_rows(str(tmp_path / "dd"), split="dev"))


def test_iter_rows_reads_inputs_as_hsa_augment_does(shards, tmp_path):  # noqa: F811
    """The trainers read an input with hsa.io.InputSource: the same rows as hsa augment's reader, in order."""
    from hsa.io import InputSource, parse_line

    src = tmp_path / "in.json"
    src.write_text(json.dumps([{"id": "a", "messages": [{"role": "user", "content": "hi"}]}, {"id": "b", "messages": []}]))
    for spec in (str(shards), str(src)):
        assert list(iter_rows(spec)) == [parse_line(i) for i in InputSource.resolve(spec).items()]

def test_to_chat_converts_dialects_and_arguments():
    """Anthropic tools become OpenAI tools, string arguments become objects, train flags are kept aside."""
    row = {"messages": [{"role": "user", "content": "weather?"},
                        {"role": "assistant", "content": None, "train": False, "tool_calls": [
                            {"id": "c1", "type": "function",
                             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                        {"role": "assistant", "content": "Sunny."}],
           "tools": [{"name": "get_weather", "description": "Weather.",
                      "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]}
    chat = to_chat(row)
    assert chat["tools"] == [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                                               "parameters": row["tools"][0]["input_schema"]}}]
    call = chat["messages"][1]["tool_calls"][0]
    assert call["function"]["arguments"] == {"city": "Paris"} and call["id"] == "c1"
    assert chat["messages"][1]["content"] == "" and "train" not in chat["messages"][1]
    assert chat["train"] == [True, False, True, True]


def test_to_chat_reads_hsa_rows(shards):  # noqa: F811
    """An augmented row converts with its variant tools and its mapping in the record."""
    rows = list(iter_rows(str(shards)))
    chat = to_chat(rows[1])
    names = {t["function"]["name"] for t in chat["tools"]}
    assert names == {t["function"]["name"] for t in rows[1]["tools"]}
    assert chat["record"]["mapping"] == rows[1]["mapping"]["steps"]


def test_to_chat_requires_messages():
    """A row without messages says which columns it has and what format is expected."""
    with pytest.raises(TrainerInputError, match=r"no 'messages' column \(found: \['text'\]\)"):
        to_chat({"text": "hello"})


def test_model_path_errors(tmp_path):
    """Missing local paths and folders without a model are reported; hub-like ids pass through."""
    with pytest.raises(FileNotFoundError, match="does not exist.*trainers.tiny"):
        resolve_model_path(str(tmp_path / "missing"))
    with pytest.raises(TrainerInputError, match="required"):
        resolve_model_path(None)
    with pytest.raises(TrainerInputError, match="without config.json"):
        resolve_model_path(str(tmp_path))
    assert resolve_model_path("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"


def test_tokenizer_without_chat_template(tiny_model, tmp_path):  # noqa: F811
    """A tokenizer without a chat template is an error that names --chat_template_path; passing one fixes it."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    tok.chat_template = None
    tok.save_pretrained(tmp_path)
    for name in ("chat_template.jinja",):
        (tmp_path / name).unlink(missing_ok=True)
    (tmp_path / "config.json").write_text((tiny_model / "config.json").read_text())
    with pytest.raises(TrainerInputError, match="no chat template.*--chat_template_path"):
        load_tokenizer(ModelArguments(model_name_or_path=str(tmp_path)))
    tok = load_tokenizer(ModelArguments(model_name_or_path=str(tmp_path),
                                        chat_template_path=str(tiny_model / "chat_template.jinja")))
    assert "generation" in tok.chat_template



def test_chat_template_path_reads_a_file_a_folder_or_its_config(tiny_model, tmp_path):  # noqa: F811
    """--chat_template_path takes a .jinja file, a tokenizer folder or its tokenizer_config.json (the reader of hsa
    export --template); a folder without one and a missing path are errors naming the option."""
    jinja = (tiny_model / "chat_template.jinja").read_text(encoding="utf-8")
    config = tmp_path / "tok" / "tokenizer_config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"chat_template": jinja}))
    for spec in (tiny_model / "chat_template.jinja", tiny_model, config.parent, config):
        tok = load_tokenizer(ModelArguments(model_name_or_path=str(tiny_model), chat_template_path=str(spec)))
        assert tok.chat_template == jinja, spec
    (tmp_path / "empty").mkdir()
    with pytest.raises(TrainerInputError, match="--chat_template_path .*empty: no chat template there"):
        load_tokenizer(ModelArguments(model_name_or_path=str(tiny_model), chat_template_path=str(tmp_path / "empty")))
    with pytest.raises(FileNotFoundError, match="--chat_template_path .*nope.jinja: no such file"):
        load_tokenizer(ModelArguments(model_name_or_path=str(tiny_model), chat_template_path=str(tmp_path / "nope.jinja")))

def test_tiny_model_reloads_with_the_same_ids(tiny_model, fixture_records):  # noqa: F811
    """The saved tiny tokenizer reloads (as Qwen2Tokenizer) with exactly the ids of the tokenizer it was trained as."""
    from tokenizers import Tokenizer
    from transformers import AutoConfig, AutoTokenizer

    raw = Tokenizer.from_file(str(tiny_model / "tokenizer.json"))
    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    chat = to_chat(fixture_records[5])
    text = tok.apply_chat_template(chat["messages"], tools=chat["tools"], tokenize=False)
    for sample in (text, "12345 ¥79, DON'T  stop\n\n<tool_call>{}</tool_call>"):
        assert tok(sample, add_special_tokens=False)["input_ids"] == raw.encode(sample, add_special_tokens=False).ids
    assert tok.decode(tok(text)["input_ids"]) == text
    cfg = AutoConfig.from_pretrained(str(tiny_model))
    assert cfg.vocab_size == len(tok) and 1_000_000 < _params(tiny_model) < 5_000_000


def test_tiny_model_template_renders_tool_calls(tiny_model):  # noqa: F811
    """The tiny chat template renders tools, Hermes tool calls with object arguments and generation prompts."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
                {"role": "tool", "content": "ok"}, {"role": "tool", "content": "ok2"}]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    text = tok.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
    assert '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call><|im_end|>' in text
    assert text.count("<|im_start|>user") == 2 and text.endswith("<|im_start|>assistant\n")
    assert json.loads(text.split("<tools>\n")[1].split("\n</tools>")[0]) == tools[0]


def _params(folder) -> int:
    from trainers.tiny import _count_parameters

    return _count_parameters(folder)
