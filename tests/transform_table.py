"""Test parameters of every registered transform: the table that enrols transforms in the suites.

A transform registered without an entry here makes tests/test_transform.py (and every
per-transform test of tests/test_properties.py) fail. Each entry is a zero-argument
factory building an instance with options that apply often on the fixtures and on
records drawn by :mod:`hsa.testing`.
"""

from __future__ import annotations

from hsa.transform import OneOf, Sequence, SomeOf, Sometimes
from transforms import hook, prompt, skill, tool

TABLE = {
    # combinators
    "meta.sequence": lambda: Sequence((tool.ToolRename(), tool.ParamRename())),
    "meta.one_of": lambda: OneOf((tool.ToolRename(), tool.ParamRename()), weights=(1.0, 2.0)),
    "meta.some_of": lambda: SomeOf((tool.ToolRename(), tool.ParamRename(), tool.Reorder()), n=(1, 2)),
    "meta.sometimes": lambda: Sometimes(tool.ToolRename(), p=0.5),
    # tool family
    "tool.rename": lambda: tool.ToolRename(styles=("snake", "camel", "pascal", "kebab", "screaming", "verb", "noun",
                                                   "prefix", "mask", "slight", "medium")),
    "tool.param_rename": lambda: tool.ParamRename(styles=("snake", "camel", "pascal", "kebab", "mask", "slight"), p=0.8),
    "tool.swap_names": lambda: tool.SwapNames(params_p=0.5, include_skill_tool=True),
    "tool.reorder": lambda: tool.Reorder(),
    "tool.describe": lambda: tool.Describe(p=0.8),
    "tool.drop_descriptions": lambda: tool.DropDescriptions(p=0.7),
    "tool.nest": lambda: tool.Nest(p=0.8),
    "tool.flatten": lambda: tool.Flatten(),
    "tool.distractors": lambda: tool.Distractors(n=(1, 3), params_p=0.5),
    "tool.add_required": lambda: tool.AddRequired(p=0.8),
    "tool.values": lambda: tool.Values(p=0.8, styles=(*tool.VALUE_RESTYLES, "mask")),  # masks too: explained
    "tool.dialect": lambda: tool.Dialect(),
    "tool.irrelevance": lambda: tool.Irrelevance(),
    # skill family
    "skill.rename": lambda: skill.SkillRename(),
    "skill.describe": lambda: skill.SkillDescribe(p=0.9),
    "skill.restructure": lambda: skill.SkillRestructure(),
    "skill.catalog": lambda: skill.SkillCatalog(distractors=(0, 2)),
    # prompt family
    "prompt.reorder": lambda: prompt.PromptReorder(),
    "prompt.delimiters": lambda: prompt.PromptDelimiters(),
    "prompt.titles": lambda: prompt.PromptTitles(p=0.9),
    "prompt.paraphrase": lambda: prompt.PromptParaphrase(p=0.6),
    "prompt.tool_format": lambda: prompt.PromptToolFormat(),
    "prompt.placement": lambda: prompt.PromptPlacement(),
    # hook family (and trajectory.strip_retries)
    "hook.sync": lambda: hook.HookSync(),
    "hook.rename_locals": lambda: hook.HookRenameLocals(p=0.7, p_hook=0.9),
    "hook.restyle": lambda: hook.HookRestyle(p=0.7),
    "hook.message_format": lambda: hook.HookMessageFormat(p=0.8),
    "trajectory.strip_retries": lambda: hook.StripRetries(p=0.5),
}

#: Transforms that cannot apply to the bundled fixtures, and why (their own tests build records they apply to).
NOT_ON_FIXTURES = {
    "hook.sync": "the fixture hook events already match their hooks (tests/test_hook_transforms.py breaks some)",
    "trajectory.strip_retries": "a fifth of the fixtures hold a hook retry, not always one of the sampled few "
                                "(tests/test_hook_transforms.py strips them on every fixture that has one)",
    "prompt.tool_format": "the fixture prompts do not render the tools (tests/test_prompt_transforms.py adds them)",
}
