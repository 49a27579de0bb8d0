# ruff: noqa
# mypy: ignore-errors
# fmt: off
# Test data for benchmarks/parsers.py, not part of any package: a copy of
# NousResearch/hermes-agent environments/tool_call_parsers/glm47_parser.py
# at commit 1909877e6edc4d946e63333b704bdae0549ad48c (MIT licence, see LICENSE beside this file; read from the fork
# peteromallet/hermes-agent, which carries that commit). Changed: these header lines,
# and the package name environments.tool_call_parsers -> reference_parsers.

"""
GLM 4.7 tool call parser.

Same as GLM 4.5 but with slightly different regex patterns.
The tool_call tags may wrap differently and arg parsing handles
newlines between key/value pairs.

Based on VLLM's Glm47MoeModelToolParser (extends Glm4MoeModelToolParser).
"""

import re

from reference_parsers import ParseResult, register_parser
from reference_parsers.glm45_parser import Glm45ToolCallParser


@register_parser("glm47")
class Glm47ToolCallParser(Glm45ToolCallParser):
    """
    Parser for GLM 4.7 tool calls.
    Extends GLM 4.5 with updated regex patterns.
    """

    def __init__(self):
        super().__init__()
        # GLM 4.7 uses a slightly different detail regex that includes
        # the <tool_call> wrapper and optional arg_key content
        self.FUNC_DETAIL_REGEX = re.compile(
            r"<tool_call>(.*?)(<arg_key>.*?)?</tool_call>", re.DOTALL
        )
        # GLM 4.7 handles newlines between arg_key and arg_value tags
        self.FUNC_ARG_REGEX = re.compile(
            r"<arg_key>(.*?)</arg_key>(?:\\n|\s)*<arg_value>(.*?)</arg_value>",
            re.DOTALL,
        )
