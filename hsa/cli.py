"""The ``hsa`` command line. Heavy imports live inside the commands so ``--help`` is instant."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

__all__ = ["main", "make_parser"]


def _die(msg: str, code: int = 2) -> int:
    print(f"hsa: error: {msg}", file=sys.stderr)
    return code


def _one_blas_thread() -> None:
    """One OpenBLAS thread for a data-path command (``augment``, ``canonicalize``, ``validate``: :func:`main` calls
    it), unless the environment names a number.

    The data path does no linear algebra, but pyarrow imports numpy, and numpy's OpenBLAS starts a thread for each
    CPU when it loads, which spin for a while: 0.1 s of CPU of the 0.47 s a one-record ``hsa augment`` took on 2
    cores, and more on a machine with more. Set before numpy loads (the commands import it later), so the process
    and the worker processes it starts (which inherit the environment) skip it; where numpy is already loaded (a
    caller's own process), nothing is changed."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


# --------------------------------------------------------------------------- augment


def cmd_augment(args: argparse.Namespace) -> int:
    from hsa.pipeline import AugmentError, augment
    from hsa.recipes import hold_out, load_recipe

    if not args.no_exec_hooks:  # the sandbox probe waits on a process: let it run while the recipe is read
        from hsa.sandbox import probe_ahead

        probe_ahead(args.hook_sandbox)
    try:
        recipe = load_recipe(args.recipe)
        if args.hold_out:
            recipe = hold_out(recipe, args.hold_out)
    except (ValueError, KeyError, FileNotFoundError) as exc:
        return _die(str(exc.args[0] if exc.args else exc))
    command = "hsa " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["augment"] else None
    if not args.no_exec_hooks and not args.quiet and args.hook_sandbox in ("best", "require"):
        from hsa.sandbox import set_policy, status

        set_policy(args.hook_sandbox)
        print(status().brief(), file=sys.stderr)
    try:
        manifest = augment(args.inputs, args.out, recipe, seed=args.seed, variants=args.variants,
                           keep_original=args.keep_original, workers=args.workers, shard_size=args.shard_size,
                           batch_size=args.batch_size, strict=args.strict, overwrite=args.overwrite,
                           resume=args.resume, rank=args.rank, world_size=args.world_size,
                           progress=False if args.quiet else None, hold_out=args.hold_out, command=command,
                           exec_hooks=not args.no_exec_hooks, call_arguments=args.call_arguments,
                           tools_file=args.tools, engine=args.engine, ray_address=args.ray_address,
                           harness_pool=args.harness_pool, strict_hooks=args.strict_hooks,
                           hook_sandbox=args.hook_sandbox)
    except AugmentError as exc:
        return _die(str(exc))
    if not args.quiet:
        if "rank" in manifest:
            r = manifest["rank"]
            print(f"rank {r['rank']} of {r['world_size']} done ({manifest['counts']['input_records']} records); "
                  f"run every rank, then: hsa merge PART... --out DIR")
        else:
            _print_summary(manifest, args.out)
    if "rank" not in manifest and manifest["counts"]["input_records"] == 0:
        print(f"hsa: warning: the input ({', '.join(map(str, args.inputs))}) holds no records; nothing was augmented",
              file=sys.stderr)
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from hsa.pipeline import AugmentError, merge

    try:
        manifest = merge(args.parts, args.out)
    except AugmentError as exc:
        return _die(str(exc))
    _print_summary(manifest, args.out)
    return 0


def _hook_sandbox_option(p: argparse.ArgumentParser) -> None:
    """``--hook-sandbox``, shared by the commands that run hooks from records (docs/hooks.md)."""
    p.add_argument("--hook-sandbox", choices=["require", "best", "off"], default="best",
                   help="walls around the processes that run hooks from records: best (default) uses every layer "
                        "this machine gives (Landlock, seccomp, an unprivileged uid, hard limits, namespaces); "
                        "require refuses to run unless the file, network and process walls stand; off keeps only "
                        "the limits. `hsa sandbox check` shows what this machine gives")


def cmd_sandbox_check(args: argparse.Namespace) -> int:
    from hsa.sandbox.attacks import run_battery

    return run_battery(policy=args.hook_sandbox, as_json=args.json)


def _pool_size(text: str) -> int:
    """``--harness-pool``: a whole number of at least 0."""
    try:
        k = int(text)
    except ValueError:
        k = -1
    if k < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0 (got {text!r}); 0 draws every variant's "
                                         "harness afresh")
    return k


def _workers(text: str) -> int:
    """``--workers``: a count of at least 1, or ``auto`` for one per CPU this process may use."""
    if text == "auto":
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # not on Linux
            return max(1, os.cpu_count() or 1)
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes or 'auto', got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {n}); 'auto' uses one per CPU")
    return n


def cmd_stats(args: argparse.Namespace) -> int:
    from hsa.stats import compute_stats, render_text

    if not (Path(args.dataset) / "state.json").exists():
        return _die(f"{args.dataset} is not an hsa output folder (no state.json)")
    stats = compute_stats(args.dataset, tokenizer=args.tokenizer)
    print(render_text(stats))
    if args.html:  # the page of `hsa report` (one way to make it): overview, plots and a sample of variants
        from hsa.report import ReportInputError, write_report

        try:
            write_report(args.dataset, args.html, tokenizer=args.tokenizer, command=_command_line(args))
        except ReportInputError as exc:
            return _die(str(exc))
        print(f"report page written to {args.html} (hsa report {args.dataset} --out {args.html} writes the same; "
              "it also takes --eval)", file=sys.stderr)
    if args.json:
        public = {k: v for k, v in stats.items() if not k.startswith("_")}
        Path(args.json).write_text(json.dumps(public, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


def _print_summary(manifest: dict, out: str) -> None:
    c = manifest["counts"]
    print(f"{c['input_records']} records read: {c['sources_written']} augmented, {c['rejected']} rejected; "
          f"{c['rows_written']} rows in {len(manifest['shards'])} shard(s) at {out}")
    run = manifest.get("this_run") or {}
    if run.get("resumed"):
        kept = run["shards_kept"]
        print(f"resumed: {kept} shard{'s' if kept != 1 else ''} ({run['records_kept']} records) kept from the "
              f"interrupted run, {run['records_augmented']} records augmented now")
    if c.get("task_changing_variants"):
        print(f"{c['task_changing_variants']} of those variants change the task (e.g. tool.irrelevance) "
              "and are not task-preserving")
    if c["variants_failed"]:
        print(f"{c['variants_failed']} variants failed verification and were not written:")
        for reason, n in manifest["variant_failures"].items():
            print(f"  {n:6d}  {reason}")
    if manifest.get("converted_layouts"):
        print("records read from other layouts (each noted in its rows' notes):")
        for layout, n in manifest["converted_layouts"].items():
            print(f"  {n:6d}  {layout}")
    if manifest.get("records_with_unread_calls"):
        print(f"{manifest['records_with_unread_calls']} records call a tool in their assistant text in a layout hsa "
              "does not read (noted as 'unread call' in their rows): those calls stay text; convert them first")
    if manifest.get("records_without_tools_or_calls"):
        from hsa.formats.common import plural

        print(f"{plural(manifest['records_without_tools_or_calls'], 'record')} with neither tools nor tool calls: "
              "read as plain chat (an agent that writes its commands as text, as SWE-agent's and mini-swe-agent's "
              "text modes do, is read this way: its commands stay text that no transform varies)")
    if manifest.get("hooks_not_replayed"):
        print("hooks not replayed (they fail on their own payloads, so invariant 7 was not checked for them; rows "
              "noted 'hook not replayed'; --strict-hooks rejects them):")
        for hook, n in manifest["hooks_not_replayed"].items():
            print(f"  {n:6d}  {hook}")
    if manifest.get("hook_sandbox"):
        from hsa.sandbox.layers import describe

        print(describe(manifest["hook_sandbox"]))
    if manifest["reject_reasons"]:
        print("rejected records (details in rejects.jsonl):")
        for reason, n in manifest["reject_reasons"].items():
            print(f"  {n:6d}  {reason}")
    if manifest["transforms"]:
        print(f"{'family / transform':30s} {'applied':>8s} {'failed':>7s}  skipped and failed (reason)")
        families = manifest.get("families") or {}
        by_family: dict[str, list] = {}
        for name, t in manifest["transforms"].items():
            family = next((f for f in families if name.startswith(f + ".")), name.split(".", 1)[0])
            by_family.setdefault(family, []).append((name, t))
        for family, members in by_family.items():
            f = families.get(family)
            if f is not None:
                print(f"{family:30s} {f['applied']:8d} {f['failed']:7d}  {f['skipped']} skipped")
            for name, t in members:
                reasons = [f"{n} skipped ({r})" for r, n in t["skipped"].items()]
                reasons += [f"{n} failed ({r})" for r, n in t.get("failed", {}).items()]
                failed = sum(t.get("failed", {}).values())
                print(f"  {name:28s} {t['applied']:8d} {failed:7d}  {'; '.join(reasons) or '-'}")


# --------------------------------------------------------------------------- export / canonicalize


def _write_jsonl(records, out: str) -> int:
    """Write ``records`` as JSON Lines to the file ``out`` (its folder made if missing), or to standard output
    for ``-``."""
    n = 0
    if out != "-":
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    f = sys.stdout if out == "-" else open(out, "w", encoding="utf-8")
    try:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
            n += 1
    finally:
        if f is not sys.stdout:
            f.close()
    return n


def _jsonl_out_problem(out: str) -> str | None:
    """Why ``out`` cannot be the JSONL file to write, or None."""
    if out != "-" and Path(out).is_dir():
        return f"--out {out} is a folder; give the JSONL file to write (or - for standard output)"
    return None


def cmd_export(args: argparse.Namespace) -> int:
    from hsa.io import read_records

    src = Path(args.dataset)
    if not src.exists():
        return _die(f"{src} does not exist; give the --out folder of an 'hsa augment' run")
    if not src.is_dir():
        return _die(f"{src} is a file, not an hsa output folder; 'hsa augment {src} --out DIR' makes one "
                    "(and 'hsa validate' reads JSONL files as they are)")
    if not (src / "state.json").exists():
        return _die(f"{src} is not an hsa output folder (no state.json); run 'hsa augment ... --out {src}' first")
    if problem := _jsonl_out_problem(args.out):
        return _die(problem)
    if args.template:
        return _export_for_template(args, read_records(src))
    n = _write_jsonl(read_records(src), args.out)
    print(f"{n} records written to {args.out}", file=sys.stderr)
    return 0


class _TemplateHidesHarness(Exception):
    """``hsa export --template``: the template leaves out the tools or the calls of a row (the message says which)."""


def _export_for_template(args: argparse.Namespace, records) -> int:
    """``hsa export --template T``: the rows as the trainers render them for template ``T`` (Hugging Face
    conversational format, tools in the OpenAI form), adapted where the template's probes show a need.

    A template that renders neither the tools nor the tool calls (the check ``trainers.sft`` runs, on a probe
    and on the first row with both) is refused: exit 2, the bundled template named, nothing written. So is one
    that cannot render a tool call and its result at all: the probe and the first row with calls both fail (a
    template for plain chat turns), instead of a failure for every row."""
    from collections import Counter

    from hsa.chat import CHAT_COMPAT, ChatInputError, adaptation_summary, tally, to_chat
    from hsa.chat_template import compile_error, harness_not_rendered, losses_summary, lost_turns, \
        probe_final_calls_dropped, probe_harness_not_rendered, read_template, refusal_cause, render, \
        template_error, template_losses, template_needs

    try:
        template = read_template(args.template)
    except (ValueError, FileNotFoundError) as exc:
        return _die(f"--template: {exc}")
    if problem := compile_error(template):
        return _die(f"--template {args.template}: not a valid Jinja template: {problem}. Fix the template (Hugging "
                    "Face's apply_chat_template would fail on it the same way)")

    def render_fn(messages, tools):
        return render(template, messages, tools)

    def refused(where: str, problem: str) -> int:
        from trainers.common import bundled_template  # torch-free: the path of the bundled template

        return _die(f"--template {args.template}: {where}the chat template {problem}. Rows exported for it would "
                    f"train nothing useful; pass --template {bundled_template()} (ChatML with tools and tool calls, "
                    "bundled) or another template that renders both")

    needs = template_needs(render_fn)
    compat = tuple(c for c in CHAT_COMPAT if c in needs)
    cause = refusal_cause(render_fn, compat)  # the probe does not render: confirmed or cleared by the first row
    if cause is None and (problem := probe_harness_not_rendered(render_fn, compat)):  # with calls
        return refused("", problem)

    def refusal(error: str) -> str:
        """Why the template is refused, when the first row with calls fails with ``error`` as the probe did."""
        kind, probe_error = cause
        same = "the same way" if error == probe_error else f"({probe_error})"
        if kind == "conversation":
            return (f"cannot render this row ({error}), nor a probe of a system message, a question and an answer "
                    f"{same}: it renders no conversation hsa writes")
        if kind == "tools":
            return (f"cannot render this row ({error}), and a probe of two tools (each parameter typed and "
                    f"described) and no tool turn fails {same}: it cannot render a tool list")
        same = "the same way" if error == probe_error else f"too ({probe_error})"
        return (f"cannot render a tool call and its result ({error}); a probe conversation of one call and its "
                f"result fails {same}, with the rewrites hsa knows applied ({', '.join(compat) or 'none needed'}): "
                "it takes no tool turns")
    for name, why in needs.items():
        print(f"the template needs {name} (probe: {why}); rows are adapted", file=sys.stderr)
    final_dropped = probe_final_calls_dropped(render_fn, compat)
    if final_dropped:
        print(f"the template {final_dropped}: rows whose last turn is a call are not exported", file=sys.stderr)
    losses = template_losses(render_fn, compat)
    for found in losses.values():
        print(f"the template {found}: the rows keep it, the template leaves it out of the training text (counted "
              "below)", file=sys.stderr)
    lost: dict[str, list[int]] = {}  # kind -> [rows, turns] the template leaves a part of out
    adapted: dict[str, list[int]] = {}
    failed = 0
    reasons: Counter[str] = Counter()  # the template's errors of the rows it refused, for the summary
    checked = False

    def rows():
        nonlocal failed, checked
        for i, rec in enumerate(records, 1):
            where = f"row {i} ({rec.get('id')})"
            chat = None
            try:
                chat = to_chat(rec, where=where, compat=compat)
                render_fn(chat["messages"], chat["tools"])
            except ChatInputError as exc:
                failed += 1
                print(f"{where}: not exported: {exc}", file=sys.stderr)
                continue
            except Exception as exc:  # noqa: BLE001 - the template's own raise_exception
                if cause and not checked and chat is not None and any(m.get("tool_calls") for m in chat["messages"]):
                    raise _TemplateHidesHarness(where, refusal(template_error(exc)))
                failed += 1
                reasons[template_error(exc)] += 1
                print(f"{where}: the template still refuses it: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            if final_dropped and chat["messages"] and chat["messages"][-1].get("tool_calls"):
                failed += 1
                reasons["the template drops the calls of a last assistant turn"] += 1
                print(f"{where}: not exported: it ends with calls, and the template {final_dropped}", file=sys.stderr)
                continue
            if not checked and chat["tools"] and any(m.get("tool_calls") for m in chat["messages"]):
                checked = True  # the first row with tools and calls, as trainers.sft checks it
                if problem := harness_not_rendered(render_fn, chat["messages"], chat["tools"]):
                    raise _TemplateHidesHarness(where, problem)
            tally(adapted, chat["adapted"])
            tally(lost, lost_turns(chat["messages"], losses))
            out = {k: rec[k] for k in ("id", "source_id", "variant") if rec.get(k) is not None}
            yield {**out, "messages": chat["messages"], "tools": chat["tools"]}

    try:
        n = _write_jsonl(rows(), args.out)
    except _TemplateHidesHarness as exc:
        if args.out != "-":
            Path(args.out).unlink(missing_ok=True)
        return refused(f"{exc.args[0]}: ", exc.args[1])
    print(f"{n} rows written for the template to {args.out}; {failed} failed", file=sys.stderr)
    if reasons:
        print("rows the template refused, by its error: " + "; ".join(
            f"{k} rows: {why}" for why, k in reasons.most_common(5))
            + (f"; {len(reasons) - 5} other errors" if len(reasons) > 5 else ""), file=sys.stderr)
    if adapted:
        print(f"rows adapted to the template: {adaptation_summary(adapted)}", file=sys.stderr)
    for phrase in losses_summary(lost):
        print(f"the template leaves out {phrase}", file=sys.stderr)
    return 1 if failed else 0


def cmd_canonicalize(args: argparse.Namespace) -> int:
    from hsa.context import collecting_less
    from hsa.io import read_records
    from hsa.records import RecordError

    if not Path(args.input).exists():
        return _die(f"{args.input} does not exist")
    if problem := _jsonl_out_problem(args.out):
        return _die(problem)
    errors = 0

    def records():  # (line, record or the RecordError of an unreadable line)
        if Path(args.input).is_dir():
            yield from enumerate(read_records(args.input), 1)
            return
        from hsa.io import iter_file_items, parse_line

        for item in iter_file_items(args.input):
            try:
                yield item.line, parse_line(item)
            except RecordError as exc:
                yield item.line, exc

    def outcomes():  # (position, line, record mapped back or None, why not), in input order
        from hsa.pipeline.workers import CanonicalizeJob

        items = ((pos, line, rec) for pos, (line, rec) in enumerate(records()))
        if args.workers <= 1:
            yield from CanonicalizeJob().work(items)
            return
        from hsa.pipeline.workers import WorkerSet, process_context

        with WorkerSet(process_context(), args.workers, CanonicalizeJob(), batch_size=8) as pool:
            yield from pool.results(items)

    def gen():
        nonlocal errors
        for _, i, out, why in outcomes():
            if why is None:
                yield out
            else:
                errors += 1
                print(f"{args.input}:{i}: cannot canonicalize: {why}", file=sys.stderr)

    from hsa.pipeline.workers import WorkerError

    try:
        with collecting_less():  # hsa.context.GC_THRESHOLDS: a long run of records
            n = _write_jsonl(gen(), args.out)
    except WorkerError as exc:  # a worker died (killed, out of memory): a file of part of the rows is no use
        if args.out == "-":
            return _die(f"{exc}; the rows before it were written: rerun, or pass --workers 1")
        Path(args.out).unlink(missing_ok=True)
        return _die(f"{exc}; {args.out} is not written: rerun, or pass --workers 1")
    print(f"{n} records mapped back to their source harness, written to {args.out}; {errors} failed",
          file=sys.stderr)
    return 1 if errors else 0


# --------------------------------------------------------------------------- validate


def cmd_validate(args: argparse.Namespace) -> int:
    from hsa.records import RecordError, read_harness_file
    from hsa.validate import validate_path

    if not Path(args.input).exists():
        return _die(f"{args.input} does not exist")
    try:
        harness = read_harness_file(args.tools) if args.tools else None
    except RecordError as exc:
        return _die(f"--tools {args.tools}: {exc.detail}")
    if not args.no_exec_hooks:
        from hsa.sandbox import set_policy, status

        set_policy(args.hook_sandbox)
        print(status().brief(), file=sys.stderr)
        if args.hook_sandbox == "require" and status().missing_walls():
            return _die(f"--hook-sandbox require: no layer keeps {'; '.join(status().missing_walls())}; run "
                        "`hsa sandbox check` for details, or --hook-sandbox best")
    from hsa.pipeline.workers import WorkerError

    try:
        report = validate_path(args.input, max_report=args.max_report, harness=harness,
                               exec_hooks=not args.no_exec_hooks, workers=args.workers)
    except WorkerError as exc:  # a worker died (killed, out of memory): no report of part of the rows
        return _die(f"{exc}; rerun, or pass --workers 1")
    for line in report.lines:
        print(line)
    print(report.summary(), file=sys.stderr)
    for line in report.reading():
        print(line, file=sys.stderr)
    return 1 if report.violations else 0


# --------------------------------------------------------------------------- show


def cmd_show(args: argparse.Namespace) -> int:
    import shutil

    from hsa.show import DEFAULT_WIDTH, show

    tty = sys.stdout.isatty()
    width = args.width or (shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns if tty else DEFAULT_WIDTH)
    try:
        text = show(args.dataset, args.id, color=(tty and not args.no_color), context=args.context, width=width)
    except (KeyError, FileNotFoundError, ValueError) as exc:
        return _die(str(exc.args[0] if exc.args else exc))
    print(text)
    return 0


# --------------------------------------------------------------------------- audit


def cmd_audit(args: argparse.Namespace) -> int:
    from hsa.audit import audit, format_jsonl, format_text

    try:
        result = audit(args.data, sample=args.sample, seed=args.seed, kinds=args.kind)
    except (FileNotFoundError, ValueError) as exc:
        return _die(str(exc))
    text = format_jsonl(result) if args.format == "jsonl" else format_text(result) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"{len(result.changes)} changes of {len(result.read)} variants written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


# --------------------------------------------------------------------------- report


def _command_line(args: argparse.Namespace) -> str:
    """The command that made ``args``, as a shell line (shown on the page it writes)."""
    return "hsa " + " ".join(shlex.quote(a) for a in args.argv)


def cmd_report(args: argparse.Namespace) -> int:
    import time

    from hsa.report import ReportInputError, write_report

    if Path(args.out).is_dir():
        return _die(f"--out {args.out} is a folder; give the HTML file to write (e.g. {Path(args.out) / 'report.html'})")
    start = time.perf_counter()
    try:
        path = write_report(args.dataset, args.out, evals=args.eval, predictions=args.predictions,
                            sample=args.sample, seed=args.seed, tokenizer=args.tokenizer, title=args.title,
                            command=_command_line(args))
    except ReportInputError as exc:
        return _die(str(exc))
    size = path.stat().st_size
    print(f"report page written to {path} ({size / 1e6:.1f} MB, {time.perf_counter() - start:.1f} s); open it in a "
          "browser", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- listings


def cmd_recipes(args: argparse.Namespace) -> int:
    from hsa.recipes import builtin_recipes, load_recipe, recipe_to_dict

    if args.name:
        try:
            print(json.dumps(recipe_to_dict(load_recipe(args.name)), indent=2))
        except (ValueError, FileNotFoundError) as exc:
            return _die(str(exc))
        return 0
    for name, summary in builtin_recipes().items():
        print(f"{name:20s} {summary}")
    return 0


def cmd_rewrite_hook(args: argparse.Namespace) -> int:
    from hsa.codemods import rewrite_module

    path = Path(args.path)
    if not path.is_file():
        return _die(f"{path} is not a file; give a Python source file")
    source = path.read_text(encoding="utf-8")
    try:
        out, stats = rewrite_module(source, seed=args.seed)
    except Exception as exc:  # noqa: BLE001 - LibCST parse errors and the like
        return _die(f"{path}: cannot rewrite: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    sys.stdout.write(out)
    if args.stats:
        applied = {k: v for k, v in stats.items() if not k.startswith("refused.")}
        refused = {k[len("refused."):]: v for k, v in stats.items() if k.startswith("refused.")}
        print(f"{path}: {sum(applied.values())} rewrites", file=sys.stderr)
        for k, v in applied.items():
            print(f"  {v:6d}  {k}", file=sys.stderr)
        if refused:
            print("left alone (not provably safe):", file=sys.stderr)
            for k, v in refused.items():
                print(f"  {v:6d}  {k}", file=sys.stderr)
    return 0


def cmd_skills(args: argparse.Namespace) -> int:
    from hsa.skills_dir import SkillFormatError, SkillsExistError, export_skills, import_skills

    if args.action == "import" and not args.skills_dir:
        return _die("hsa skills import needs --skills-dir DIR (a folder of <name>/SKILL.md)")
    if args.action == "export" and not args.id:
        return _die("hsa skills export needs --id ID (the record whose skills to write)")
    for flag in ("max_file_bytes", "max_skill_bytes"):
        if getattr(args, flag) < 0:
            return _die(f"--{flag.replace('_', '-')} must be 0 or more (got {getattr(args, flag)})")
    try:
        if args.action == "import":
            report = import_skills(args.inputs, args.skills_dir, args.out, dialect=args.dialect,
                                   max_file_bytes=args.max_file_bytes, max_skill_bytes=args.max_skill_bytes)
            print(report.summary(args.out, args.skills_dir), file=sys.stderr)
        else:
            files = export_skills(args.inputs[0], args.id, args.out, overwrite=args.overwrite)
            print(f"{len(files)} skills written under {args.out}", file=sys.stderr)
    except SkillsExistError as exc:
        return _die(f"{', '.join(exc.paths)} already exist; add --overwrite to replace them")
    except (SkillFormatError, FileNotFoundError) as exc:
        return _die(str(exc))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """``hsa import claude-code|codex|tau2 LOGS... --out FILE``: agent session logs as records, one per
    conversation."""
    from collections import Counter

    if args.format == "tau2":
        from hsa.formats.tau2 import Tau2Error as SessionError
        from hsa.formats.tau2 import read_results as read_session
        from hsa.formats.tau2 import results_files as session_files
    elif args.format == "codex":
        from hsa.formats.codex import RolloutError as SessionError
        from hsa.formats.codex import read_rollout as read_session
        from hsa.formats.codex import rollout_files as session_files
    else:
        from hsa.formats.claude_code import SessionError, read_session, session_files

    if problem := _jsonl_out_problem(args.out):
        return _die(problem)
    try:
        files = session_files(args.inputs)
    except SessionError as exc:
        return _die(str(exc))
    left: Counter = Counter()
    rejects: list[dict] = []
    imported: list[dict] = []  # whether each record has tools
    n_records = 0

    def records():
        nonlocal n_records
        for path in files:
            try:
                recs, rej, lo = read_session(path)
            except SessionError as exc:
                rejects.append({"file": str(path), "reason": str(exc)})
                continue
            left.update(lo)
            rejects.extend(rej)
            n_records += len(recs)
            imported.extend({"tools": bool(r.get("tools"))} for r in recs)
            yield from recs

    _write_jsonl(records(), args.out)
    from hsa.formats.common import plural

    logs = plural(len(files), {"codex": "rollout", "tau2": "results file"}.get(args.format, "session log"))
    print(f"{plural(n_records, 'conversation')} written to {args.out} from {logs}", file=sys.stderr)
    for r in rejects:
        print(f"{r['file']}: not imported: {r['reason']}", file=sys.stderr)
    if left:
        print("left out: " + "; ".join(f"{k} {what}" for what, k in left.most_common()), file=sys.stderr)
    if n_records and args.format == "tau2":
        if not any(r.get("tools") for r in imported):
            print(f"the results hold no tool definitions (info.environment_info.tool_defs): give the domain's tools to "
                  f"the next step, e.g. 'hsa augment {args.out} --tools TOOLS.json' (a JSON list of tools)",
                  file=sys.stderr)
    elif n_records and args.format == "codex":
        print(f"the rollouts hold no tool definitions: give them to the next step, e.g. 'hsa augment {args.out} "
              "--tools TOOLS.json' (a JSON list of tools, or an object with 'tools')", file=sys.stderr)
    elif n_records:
        print(f"the logs hold no tool definitions or system prompt: give them to the next step, e.g. "
              f"'hsa augment {args.out} --tools HARNESS.json' (a JSON list of tools, or an object with 'tools' and "
              "'system', 'skills', 'hooks')", file=sys.stderr)
    return 1 if rejects else 0


def cmd_transforms(args: argparse.Namespace) -> int:
    from hsa.transform import registry

    for name, cls in registry().items():
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        print(f"{name:28s} {cls.family:10s} {doc}")
    return 0


# --------------------------------------------------------------------------- parser


#: The commands of :func:`make_parser`, in its order.
COMMANDS = ("augment", "merge", "stats", "report", "export", "canonicalize", "validate", "sandbox", "show", "audit",
            "recipes", "rewrite-hook", "skills", "import", "eval", "bench", "transforms")


def make_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``hsa`` command line. ``only`` (one of :data:`COMMANDS`): that command's parser alone, for a command line
    that names it; the others' options (and the modules their defaults and help come from: the report, the audit,
    the evaluation, the benchmark) are not built, which is most of the parser's start-up."""

    def want(name: str) -> bool:
        return only is None or only == name

    p = argparse.ArgumentParser(prog="hsa", description="Harness-State Augmentation: task-preserving variants of "
                                "agent harnesses, verified and invertible.")
    p.add_argument("--version", action="version", version="hsa 0.1.0")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    if want("augment"):
        a = sub.add_parser("augment", help="write K verified variants of every input record to an Arrow dataset",
                           description="Augment JSONL trajectories into a datasets.load_from_disk folder with "
                                       "manifest.json and rejects.jsonl.")
        a.add_argument("inputs", nargs="+", metavar="IN",
                       help="JSONL, JSONL.gz or Parquet files, datasets.save_to_disk folders, or hub ids (hf://owner/name[@revision][:split])")
        a.add_argument("--out", required=True, help="output folder (must be empty or absent, or pass --overwrite)")
        a.add_argument("--variants", type=int, default=4, help="variants per record (default 4)")
        a.add_argument("--seed", type=int, default=0, help="seed; with the record id and variant index it fixes every draw")
        a.add_argument("--recipe", default="default", help="built-in recipe name or YAML/JSON file (default: default)")
        a.add_argument("--hold-out", action="append", default=[], metavar="FAMILY",
                       help="remove a transform family from the recipe (repeatable): tool, skill, prompt, hook")
        a.add_argument("--keep-original", action="store_true", help="also write each source record as variant 0")
        a.add_argument("--workers", type=_workers, default="auto",
                       help="worker processes, or 'auto': one per CPU this process may use (default; output is "
                            "identical for any count)")
        a.add_argument("--shard-size", type=int, default=1000,
                       help="input records per Arrow shard (default 1000; a shard holds about records x variants rows)")
        a.add_argument("--batch-size", type=int, default=16, help="records per work unit sent to a worker")
        a.add_argument("--strict", action="store_true", help="stop at the first rejected record")
        a.add_argument("--overwrite", action="store_true", help="replace a non-empty output folder")
        a.add_argument("--resume", action="store_true",
                       help="finish an interrupted run into the same --out (same inputs and options); done shards are kept")
        a.add_argument("--rank", type=int, default=0, help="this machine's part of the input (0-based), with --world-size")
        a.add_argument("--world-size", type=int, default=1,
                       help="number of parts; each rank writes the shards k with k %% W == R, then 'hsa merge' joins them")
        a.add_argument("--engine", choices=["local", "ray"], default="local",
                       help="local: --workers processes on this machine, each harness's records on one "
                            "(default); ray: one Ray actor per CPU, each harness's records on one, on the cluster at "
                            "--ray-address or RAY_ADDRESS (one per CPU of the cluster, or --workers where that is "
                            "more), else on a local Ray of --workers CPUs (pip install 'hsa[ray]'); both write the "
                            "same bytes")
        a.add_argument("--ray-address", metavar="ADDR",
                       help="with --engine ray: the cluster to join (e.g. ray://head:10001 or auto); default RAY_ADDRESS")
        a.add_argument("--quiet", action="store_true", help="no progress and no summary")
        a.add_argument("--call-arguments", choices=["keep", "object", "string"], default="object",
                       help="tool-call arguments all as JSON objects (default: what Hugging Face chat templates and trl "
                            "expect, `arguments | tojson`), as each record has them (keep), or all as JSON strings")
        a.add_argument("--tools", metavar="FILE",
                       help="harness for rows without one (trajectory dumps): a JSON list of tool definitions, or an "
                            "object with 'tools' and optionally 'skills', 'skill_tool', 'hooks', 'prompt' or 'system'")
        a.add_argument("--no-exec-hooks", action="store_true",
                       help="rewrite hooks statically only: no replay in the sandbox (skips invariant 7's run check)")
        _hook_sandbox_option(a)
        from hsa.pipeline import DEFAULT_HARNESS_POOL

        a.add_argument("--harness-pool", type=_pool_size, default=DEFAULT_HARNESS_POOL, metavar="K",
                       help="harness variants per distinct harness: each variant takes one of K slots and records "
                            "sharing a harness share its slots' harness edits (the 'slot' column); 0 draws every "
                            "variant's harness afresh (default: %(default)s)")
        a.add_argument("--strict-hooks", action="store_true",
                       help="reject the records with a hook that cannot run on its own payloads (a missing sibling "
                            "module or package): by default they are written, counted and noted as 'hook not replayed'")
        a.set_defaults(func=cmd_augment)

    if want("merge"):
        mg = sub.add_parser("merge", help="join the outputs of --rank/--world-size runs into one dataset")
        mg.add_argument("parts", nargs="+", help="the output folders of every rank")
        mg.add_argument("--out", required=True, help="merged output folder (may be one of the parts)")
        mg.set_defaults(func=cmd_merge)

    if want("stats"):
        st = sub.add_parser("stats", help="counts, reject reasons, lengths and name diversity of an output folder")
        st.add_argument("dataset", help="an 'hsa augment' output folder")
        st.add_argument("--tokenizer", help="also count tokens with this tokenizer (hub id or local folder)")
        st.add_argument("--html", metavar="report.html",
                        help="also write the report page of `hsa report DATA --out report.html` to this file")
        st.add_argument("--json", help="write the numbers as JSON to this file")
        st.set_defaults(func=cmd_stats)

    if want("report"):
        rp = sub.add_parser("report", help="one HTML page of a dataset: overview, plots, a variant browser and, with "
                            "--eval, the evaluation prompt by prompt", description="Write one self-contained HTML page "
                            "(no network, inline CSS, JavaScript and SVG) of an `hsa augment` output folder: the run's "
                            "inputs, recipe, counts, rejects, transforms and hooks; plots over every row; a sample of "
                            "source records beside their variants, part by part; and with --eval the accuracy groups "
                            "and a per-prompt table that says why each wrong prompt is wrong (docs/report.md).")
        rp.add_argument("dataset", metavar="DATA", help="an 'hsa augment' output folder")
        rp.add_argument("--out", required=True, metavar="report.html", help="the HTML file to write")
        rp.add_argument("--eval", "--compare", dest="eval", action="append", default=[], metavar="REPORT.json",
                        help="an evaluation report of DATA (hsa eval score / run); repeat it (or add --compare OTHER.json) "
                             "to show several models on the same prompts, each minus the first with a paired interval")
        rp.add_argument("--predictions", action="append", default=[], metavar="PREDS.jsonl",
                        help="the predictions of each --eval report, in the same order (default: the file the report "
                             "names, when it is there)")
        from hsa.report import DEFAULT_SAMPLE

        rp.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, metavar="N",
                        help=f"source records shown one by one, with all their variants and prompts (default "
                             f"{DEFAULT_SAMPLE}); counts, plots and accuracies always cover every row")
        rp.add_argument("--seed", type=int, default=0, help="which sources the sample takes (default 0)")
        rp.add_argument("--tokenizer", help="count tokens per row with this tokenizer (hub id or local folder)")
        rp.add_argument("--title", help="the page's title (default: hsa report: <DATA's name>)")
        rp.set_defaults(func=cmd_report)

    if want("export"):
        e = sub.add_parser("export", help="write the exact records of an output folder as JSONL")
        e.add_argument("dataset", help="an 'hsa augment' output folder")
        e.add_argument("--out", required=True, help="JSONL file to write ('-': standard output)")
        e.add_argument("--template", metavar="T",
                       help="write the rows as the trainers render them for this chat template (a .jinja file or a "
                            "tokenizer folder): conversational format, adapted where the template's probes show a need "
                            "(9-character call ids, one call per turn, late system messages folded, user turns merged); "
                            "a template that renders neither the tools nor the tool calls, or takes no tool turn at "
                            "all, is refused (exit 2)")
        e.set_defaults(func=cmd_export)

    if want("canonicalize"):
        c = sub.add_parser("canonicalize", help="map every variant back to its source harness")
        c.add_argument("input", help="JSONL of variants, or an output folder")
        c.add_argument("--out", required=True, help="JSONL file to write ('-': standard output)")
        c.add_argument("--workers", type=_workers, default="auto",
                       help="worker processes, or 'auto': one per CPU this process may use (default; the file written "
                            "is identical for any count)")
        c.set_defaults(func=cmd_canonicalize)

    if want("validate"):
        v = sub.add_parser("validate", help="check invariants 1-3 of any records, and variants as hsa augment does; "
                           "exit 1 on a violation")
        v.add_argument("input", help="JSONL file or output folder")
        v.add_argument("--no-exec-hooks", action="store_true",
                       help="do not replay the hooks of variants in the sandbox (skips invariant 7's run check)")
        _hook_sandbox_option(v)
        v.add_argument("--max-report", type=int, default=50, help="violations printed at most (all are counted)")
        v.add_argument("--tools", metavar="FILE", help="harness for rows without one (as hsa augment --tools)")
        v.add_argument("--workers", type=_workers, default="auto",
                       help="worker processes, or 'auto': one per CPU this process may use (default; each source's rows "
                            "are checked on one, and the report is identical for any count)")
        v.set_defaults(func=cmd_validate)

    if want("sandbox"):
        sb = sub.add_parser("sandbox", help="the hook sandbox: `hsa sandbox check` runs hostile hooks against it")
        sbs = sb.add_subparsers(dest="sandbox_command", required=True)
        sc = sbs.add_parser("check", help="run a battery of hostile hooks under the layers this machine gives and say, "
                            "per attack, whether it was blocked; exit 1 when a layer that should be on is not, or an "
                            "attack got through")
        _hook_sandbox_option(sc)
        sc.add_argument("--json", action="store_true", help="print the results as JSON")
        sc.set_defaults(func=cmd_sandbox_check)

    if want("show"):
        s = sub.add_parser("show", help="a variant beside its source, differences highlighted")
        s.add_argument("dataset", help="an 'hsa augment' output folder")
        s.add_argument("--id", required=True, help="row id, <source_id>/<variant>")
        s.add_argument("--context", type=int, default=2, help="unchanged lines shown around each change")
        s.add_argument("--no-color", action="store_true", help="no ANSI colours (the default when not on a terminal)")
        s.add_argument("--width", type=int, default=None, metavar="COLUMNS",
                       help="wrap lines at this width (default: the terminal's, else 100)")
        s.set_defaults(func=cmd_show)

    if want("audit"):
        au = sub.add_parser("audit", help="old -> new pairs of every change of a sample of variants, grouped by kind",
                            description="Print what N variants changed (tool, parameter and skill names, values, "
                            "descriptions, tool fields, added tools and skills, prompt sections, messages, hooks) as "
                            "old -> new pairs grouped by kind, for reading and hand-labelling (docs/cli.md).")
        au.add_argument("data", help="an 'hsa augment' output folder, or a JSONL of its rows ('hsa export')")
        au.add_argument("--sample", type=int, default=20, help="variants to read (0: all; default 20)")
        au.add_argument("--seed", type=int, default=0, help="fixes which variants are read (default 0)")
        from hsa.audit import KINDS  # stdlib only at import: --help stays instant

        au.add_argument("--kind", action="append", default=[], choices=KINDS, metavar="KIND",
                        help="only this kind of change, sampling among the variants that have one (repeatable): "
                        + ", ".join(KINDS))
        au.add_argument("--format", choices=("text", "jsonl"), default="text",
                        help="text: grouped by kind; jsonl: one change a line with an empty 'meaning_changed' label")
        au.add_argument("--out", help="write the report to this file instead of stdout")
        au.set_defaults(func=cmd_audit)

    if want("recipes"):
        r = sub.add_parser("recipes", help="list built-in recipes, or print one as JSON")
        r.add_argument("name", nargs="?")
        r.set_defaults(func=cmd_recipes)

    if want("rewrite-hook"):
        rh = sub.add_parser("rewrite-hook", help="print a Python file with every behaviour-preserving hook rewrite applied",
                            description="Rename locals (scope-aware, capture-free) and apply provably equivalent "
                                        "restyles; module-level names, parameters and attributes are kept.")
        rh.add_argument("path", help="a Python source file (a hook or any module)")
        rh.add_argument("--seed", type=int, default=0, help="seed for the new names (default 0)")
        rh.add_argument("--stats", action="store_true", help="print counts of each rewrite (and refusal) to stderr")
        rh.set_defaults(func=cmd_rewrite_hook)

    if want("skills"):
        sk = sub.add_parser("skills", help="Agent Skills folders: merge one into records (import) or write a record's "
                            "skills as one (export)", description="import: copy the JSONL inputs to --out, adding the "
                            "skills of --skills-dir (SKILL.md and bundled files) to every record that has none; augment "
                            "that file afterwards with 'hsa augment'. export: write the skills of record --id (a source "
                            "or a variant) as <name>/SKILL.md folders with their bundled files.")
        sk.add_argument("action", choices=("import", "export"))
        sk.add_argument("inputs", nargs="+", metavar="IN", help="JSONL files (export: a JSONL file or an output folder)")
        sk.add_argument("--out", required=True, help="import: JSONL file to write; export: skills directory")
        sk.add_argument("--skills-dir", help="import: the skills directory (<name>/SKILL.md), or one skill folder")
        sk.add_argument("--id", help="export: the record id (output rows: <source_id>/<variant>)")
        sk.add_argument("--dialect", choices=("hat", "agentskills"), default="hat",
                        help="import: skill-name rules (hat also allows underscores; default hat)")
        from hsa.skills_dir import MAX_FILE_BYTES, MAX_SKILL_BYTES  # stdlib only at import: --help stays instant

        sk.add_argument("--max-file-bytes", type=int, default=MAX_FILE_BYTES,
                        help=f"import: bundled files larger than this are left out and listed (default {MAX_FILE_BYTES})")
        sk.add_argument("--max-skill-bytes", type=int, default=MAX_SKILL_BYTES,
                        help=f"import: bundled files past this total per skill are left out and listed (default "
                        f"{MAX_SKILL_BYTES})")
        sk.add_argument("--overwrite", action="store_true", help="export: replace existing skill folders")
        sk.set_defaults(func=cmd_skills)

    if want("import"):
        im = sub.add_parser("import", help="agent logs as records: Claude Code session logs (claude-code), Codex CLI "
                                           "rollouts (codex), tau2-bench results files (tau2)",
                            description="claude-code: each session log (~/.claude/projects/<project>/<session>.jsonl, "
                            "one event per line) becomes one record per conversation in the Anthropic layout: the "
                            "chain of events ending at the last turn, an assistant message's blocks joined, a "
                            "compaction starting a new record; subagent events, summaries, system notices and "
                            "abandoned branches left out and counted. codex: each rollout "
                            "(~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl) becomes one record per conversation in "
                            "the OpenAI Responses layout, its instructions the system prompt, a compaction starting a "
                            "new record, freeform apply_patch calls as {\"input\": patch} calls; reasoning and UI "
                            "events left out and counted. tau2: each results file (data/simulations/*.json) becomes "
                            "one record per simulation, the domain's policy its system prompt, its task under 'task', "
                            "its reward under 'meta'; the messages' bookkeeping and the user simulator's own tool "
                            "calls left out and counted. The logs hold no tool definitions (tau2's only when saved "
                            "with them): pass them to 'hsa augment --tools' (docs/format.md).")
        im.add_argument("format", choices=("claude-code", "codex", "tau2"))
        im.add_argument("inputs", nargs="+", metavar="LOG",
                        help="session .jsonl files (tau2: results .json files), or folders of them")
        im.add_argument("--out", required=True, help="JSONL file to write ('-': standard output)")
        im.set_defaults(func=cmd_import)

    if want("eval"):
        from hsa.evaluation.cli import add_parser as add_eval_parser

        add_eval_parser(sub)

    if want("bench"):
        from hsa.bench.cli import add_parser as add_bench_parser

        add_bench_parser(sub)

    if want("transforms"):
        t = sub.add_parser("transforms", help="list registered transforms")
        t.set_defaults(func=cmd_transforms)

    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = make_parser(only=argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    args.argv = argv
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if args.func in (cmd_augment, cmd_canonicalize, cmd_validate):  # the data path: before numpy loads
        _one_blas_thread()
    from hsa.io import JSONArrayError

    import transforms  # noqa: F401  (the built-in families, whatever entry points this install declares)

    import signal

    # a kill of a command that runs hooks ends it as Ctrl-C does: the pool and the hook workers stop and their
    # folders go (Python's default would end the process at once and leave them); put back after
    old_term = signal.getsignal(signal.SIGTERM)
    if args.func in (cmd_augment, cmd_validate) and old_term == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        return args.func(args)
    except JSONArrayError as exc:  # an input array that stops parsing part-way (augment words its own)
        return _die(str(exc))
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        if args.func is cmd_augment:
            print(f"\ninterrupted: the shards finished so far are kept in {args.out}; rerun the same command with "
                  "--resume to finish", file=sys.stderr)
        return 130
    finally:
        if signal.getsignal(signal.SIGTERM) != old_term:
            signal.signal(signal.SIGTERM, old_term)


if __name__ == "__main__":
    raise SystemExit(main())
