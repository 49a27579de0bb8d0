# DeepSeek-V3.1 raw outputs (chat template: deepseek-ai/DeepSeek-V3.1 tokenizer_config.json):
# NAME<｜tool▁sep｜>bare JSON per call, calls chained with no separator. In thinking mode the
# prompt ends with "<think>" (think_prefilled) and the model writes "reasoning</think>answer".
B = "<｜tool▁calls▁begin｜>"
E = "<｜tool▁calls▁end｜>"
CB = "<｜tool▁call▁begin｜>"
CE = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
EOS = "<｜end▁of▁sentence｜>"


def call(name: str, arguments: str) -> str:
    return f"{CB}{name}{SEP}{arguments}{CE}"


CASES = [
    {
        "id": "plain-text",
        "text": "I'm DeepSeek-V3.1. I can help with code, math and writing.",
        "content": "I'm DeepSeek-V3.1. I can help with code, math and writing.",
        "calls": [],
    },
    {
        "id": "one-call-as-the-template-writes-it",
        "text": B
        + call("get_current_temperature", '{"location": "San Francisco, CA", "unit": "fahrenheit"}')
        + E,
        "content": None,
        "calls": [
            {
                "name": "get_current_temperature",
                "arguments": {"location": "San Francisco, CA", "unit": "fahrenheit"},
            }
        ],
    },
    {
        "id": "content-then-three-chained-calls",
        "text": (
            "I'll gather everything in parallel."
            + B
            + call("get_weather", '{"city": "Tokyo"}')
            + call("get_weather", '{"city": "Paris"}')
            + call("convert_currency", '{"amount": 100, "from": "JPY", "to": "EUR"}')
            + E
        ),
        "content": "I'll gather everything in parallel.",
        "calls": [
            {"name": "get_weather", "arguments": {"city": "Tokyo"}},
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "convert_currency", "arguments": {"amount": 100, "from": "JPY", "to": "EUR"}},
        ],
    },
    {
        "id": "thinking-mode-then-call",
        "options": {"think_prefilled": True},
        "text": (
            "The user wants the weather in Shanghai; the weather tool covers that.</think>"
            "Let me look that up." + B + call("get_current_weather", '{"location": "Shanghai"}') + E
        ),
        "content": "Let me look that up.",
        "reasoning": "The user wants the weather in Shanghai; the weather tool covers that.",
        "calls": [{"name": "get_current_weather", "arguments": {"location": "Shanghai"}}],
    },
    {
        "id": "call-inside-unclosed-thinking",
        "options": {"think_prefilled": True},
        "text": (
            "Hmm, the user is asking about the weather in Shanghai. I need to call the"
            " get_current_weather function with Shanghai as the location."
            + B
            + call("get_current_weather", '{"location": "Shanghai"}')
            + E
        ),
        "content": None,
        "reasoning": (
            "Hmm, the user is asking about the weather in Shanghai. I need to call the"
            " get_current_weather function with Shanghai as the location."
        ),
        "calls": [{"name": "get_current_weather", "arguments": {"location": "Shanghai"}}],
    },
    {
        "id": "non-thinking-mode-answer",
        "options": {"think_prefilled": False},
        "text": "The answer is 42." + EOS,
        "content": "The answer is 42.",
        "calls": [],
    },
    {
        "id": "unicode-and-nested-arguments",
        "text": (
            B
            + call(
                "create_event",
                '{"title": "Réunion d\'équipe 🗓️", "attendees": [{"name": "李雷", "email": "li@example.cn"},'
                ' {"name": "Zoë", "email": null}], "recurrence": {"freq": "weekly", "days": ["MO", "TH"]},'
                ' "notes": "Bring the ```diff``` output", "private": false}',
            )
            + E
            + EOS
        ),
        "content": None,
        "calls": [
            {
                "name": "create_event",
                "arguments": {
                    "title": "Réunion d'équipe 🗓️",
                    "attendees": [
                        {"name": "李雷", "email": "li@example.cn"},
                        {"name": "Zoë", "email": None},
                    ],
                    "recurrence": {"freq": "weekly", "days": ["MO", "TH"]},
                    "notes": "Bring the ```diff``` output",
                    "private": False,
                },
            }
        ],
    },
    {
        "id": "truncated-before-calls-end",
        "text": "Reading both files."
        + B
        + call("read_file", '{"path": "a.py"}')
        + call("read_file", '{"path": "b.py"}'),
        "content": "Reading both files.",
        "calls": [
            {"name": "read_file", "arguments": {"path": "a.py"}},
            {"name": "read_file", "arguments": {"path": "b.py"}},
        ],
    },
    {
        "id": "final-call-without-its-end-token",
        "text": B + f'{CB}bash{SEP}{{"command": "ls -la /tmp"}}',
        "content": None,
        "calls": [{"name": "bash", "arguments": {"command": "ls -la /tmp"}}],
    },
    {
        "id": "whitespace-around-name-and-arguments",
        "text": B + f'{CB} search {SEP}\n{{"query": "vllm deepseek parser"}}\n{CE}' + E,
        "content": None,
        "calls": [{"name": "search", "arguments": {"query": "vllm deepseek parser"}}],
    },
    {
        "id": "no-arguments-and-empty-arguments",
        "text": B + call("get_time", "{}") + call("list_tools", "") + E,
        "content": None,
        "calls": [{"name": "get_time", "arguments": {}}, {"name": "list_tools", "arguments": {}}],
    },
]

MALFORMED = [
    {
        "id": "bad-json-beside-good-call",
        "text": B + call("a", '{"x": 1}') + call("b", '{"x": ') + E,
        "calls": [{"name": "a", "arguments": {"x": 1}}],
    },
    {
        "id": "truncated-inside-the-arguments",
        "text": "Checking." + B + f'{CB}get_weather{SEP}{{"city": "Pa',
        "calls": [],
    },
    {"id": "no-function-name", "text": B + call("", '{"q": 1}') + E, "calls": []},
    {
        "id": "no-separator",
        "text": B + f'{CB}get_weather{{"city": "Paris"}}{CE}' + E,
        "calls": [],
    },
    {
        "id": "v3-spelling-is-not-v3-1",
        "text": B + f'{CB}function{SEP}get_weather\n```json\n{{"city": "Paris"}}\n```{CE}' + E,
        "calls": [],
    },
    {"id": "array-arguments", "text": B + call("a", "[1]") + E, "calls": []},
    {"id": "string-arguments", "text": B + call("a", '"hello"') + E, "calls": []},
    {"id": "empty-section", "text": B + E + EOS, "calls": []},
    {
        "id": "stray-text-between-calls",
        "text": B + call("a", "{}") + " then " + call("b", '{"z": null}') + E,
        "calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"z": None}}],
    },
    {
        "id": "call-not-closed-before-the-next",
        "text": B + f"{CB}a{SEP}{{}}" + call("b", '{"k": 2}') + E,
        "calls": [{"name": "b", "arguments": {"k": 2}}],
    },
    {
        "id": "stray-opener-before-a-good-section",
        "text": "Sure " + B + "wait. " + B + call("a", '{"n": 1}') + E,
        "calls": [{"name": "a", "arguments": {"n": 1}}],
    },
    {
        "id": "deeply-nested-arguments",
        "text": B + call("deep", '{"x": ' + "[" * 3000 + "]" * 3000 + "}") + E,
        "calls": [],
    },
    {"id": "repeated-openers", "text": (B + CB + SEP) * 25, "calls": []},
]
