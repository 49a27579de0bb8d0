# DeepSeek-V3 / V3-0324 / R1 / R1-0528 raw outputs (chat template: deepseek-ai/DeepSeek-V3-0324,
# deepseek-ai/DeepSeek-R1-0528 tokenizer_config.json): a ```json block per call, calls joined by "\n".
B = "<｜tool▁calls▁begin｜>"
E = "<｜tool▁calls▁end｜>"
CB = "<｜tool▁call▁begin｜>"
CE = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
EOS = "<｜end▁of▁sentence｜>"


def call(name: str, arguments: str) -> str:
    return f"{CB}function{SEP}{name}\n```json\n{arguments}\n```{CE}"


CASES = [
    {
        "id": "plain-text",
        "text": "Paris is the capital of France. It has about 2.1 million inhabitants.",
        "content": "Paris is the capital of France. It has about 2.1 million inhabitants.",
        "calls": [],
    },
    {
        "id": "one-call-as-the-template-writes-it",
        "text": B + call("get_weather", '{"location": "Tokyo", "unit": "celsius"}') + E,
        "content": None,
        "calls": [{"name": "get_weather", "arguments": {"location": "Tokyo", "unit": "celsius"}}],
    },
    {
        "id": "content-then-two-calls",
        "text": (
            "I'll check the weather in both cities."
            + B
            + call("get_current_weather", '{"location": "Tokyo"}')
            + "\n"
            + call("get_current_weather", '{"location": "Paris"}')
            + E
        ),
        "content": "I'll check the weather in both cities.",
        "calls": [
            {"name": "get_current_weather", "arguments": {"location": "Tokyo"}},
            {"name": "get_current_weather", "arguments": {"location": "Paris"}},
        ],
    },
    {
        "id": "r1-reasoning-then-call",
        "text": (
            "<think>\nThe user wants the population of Berlin. I should search for it rather than"
            " guess.\n</think>\n\n"
            + B
            + call("web_search", '{"query": "Berlin population 2024", "max_results": 3}')
            + E
        ),
        "content": None,
        "reasoning": "The user wants the population of Berlin. I should search for it rather than guess.",
        "calls": [
            {
                "name": "web_search",
                "arguments": {"query": "Berlin population 2024", "max_results": 3},
            }
        ],
    },
    {
        "id": "r1-0528-prefilled-think",
        "options": {"think_prefilled": True},
        "text": (
            "I need to see which files exist before editing anything.\n</think>\n\n"
            "Let me list the project directory first."
            + B
            + call("list_dir", '{"path": "./src", "recursive": false}')
            + E
        ),
        "content": "Let me list the project directory first.",
        "reasoning": "I need to see which files exist before editing anything.",
        "calls": [{"name": "list_dir", "arguments": {"path": "./src", "recursive": False}}],
    },
    {
        "id": "unicode-and-nested-arguments",
        "text": (
            "Writing the file now."
            + B
            + call(
                "write_file",
                '{"path": "docs/日本語.md", "content": "# Títle\\n\\n```python\\nprint(\\"héllo 👋\\")\\n```\\n",'
                ' "options": {"mode": "0644", "tags": ["naïve", "über", null, true], "retries": 2.5}}',
            )
            + E
        ),
        "content": "Writing the file now.",
        "calls": [
            {
                "name": "write_file",
                "arguments": {
                    "path": "docs/日本語.md",
                    "content": '# Títle\n\n```python\nprint("héllo 👋")\n```\n',
                    "options": {
                        "mode": "0644",
                        "tags": ["naïve", "über", None, True],
                        "retries": 2.5,
                    },
                },
            }
        ],
    },
    {
        "id": "end-of-sentence-after-the-section",
        "text": B + call("get_time", '{"timezone": "Europe/Berlin"}') + E + EOS,
        "content": None,
        "calls": [{"name": "get_time", "arguments": {"timezone": "Europe/Berlin"}}],
    },
    {
        "id": "truncated-before-calls-end",
        "text": "Looking it up."
        + B
        + call("lookup", '{"id": 42}')
        + "\n"
        + call("lookup", '{"id": 43}'),
        "content": "Looking it up.",
        "calls": [
            {"name": "lookup", "arguments": {"id": 42}},
            {"name": "lookup", "arguments": {"id": 43}},
        ],
    },
    {
        "id": "final-call-without-its-end-token",
        "text": B + f'{CB}function{SEP}read_file\n```json\n{{"path": "README.md"}}\n```',
        "content": None,
        "calls": [{"name": "read_file", "arguments": {"path": "README.md"}}],
    },
    {
        "id": "loose-whitespace-around-the-fence",
        "text": (
            B
            + "\n"
            + f'{CB}function{SEP}search ```json {{"query": "rust async traits"}} ``` {CE}'
            + "\n"
            + E
        ),
        "content": None,
        "calls": [{"name": "search", "arguments": {"query": "rust async traits"}}],
    },
    {
        "id": "no-arguments",
        "text": "Sure." + B + call("get_current_time", "{}") + E + EOS,
        "content": "Sure.",
        "calls": [{"name": "get_current_time", "arguments": {}}],
    },
    {
        "id": "text-after-the-section-is-content",
        "text": "Starting the build."
        + B
        + call("run", '{"cmd": "make -j4"}')
        + E
        + "\nI'll report back.",
        "content": "Starting the build.\nI'll report back.",
        "calls": [{"name": "run", "arguments": {"cmd": "make -j4"}}],
    },
]

MALFORMED = [
    {
        "id": "bad-json-beside-good-call",
        "text": B + call("a", '{"x": 1}') + "\n" + call("b", '{"x": ') + E,
        "calls": [{"name": "a", "arguments": {"x": 1}}],
    },
    {
        "id": "truncated-inside-the-arguments",
        "text": "Let me check." + B + f'{CB}function{SEP}get_weather\n```json\n{{"location": "Par',
        "calls": [],
    },
    {
        "id": "no-function-name",
        "text": B + f"{CB}function{SEP}\n```json\n{{}}\n```{CE}" + E,
        "calls": [],
    },
    {
        "id": "no-separator",
        "text": B + f'{CB}get_weather\n```json\n{{"location": "Tokyo"}}\n```{CE}' + E,
        "calls": [],
    },
    {
        "id": "v3-1-spelling-is-not-v3",
        "text": B + f'{CB}get_weather{SEP}{{"location": "Tokyo"}}{CE}' + E,
        "calls": [],
    },
    {
        "id": "array-arguments",
        "text": B + call("a", "[1, 2]") + E,
        "calls": [],
    },
    {
        "id": "nan-arguments",
        "text": B + call("a", '{"x": NaN}') + E,
        "calls": [],
    },
    {"id": "empty-section", "text": "Nothing to do." + B + E, "calls": []},
    {
        "id": "stray-text-between-calls",
        "text": B + call("a", "{}") + "\nand then\n" + call("b", '{"y": [1]}') + E,
        "calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"y": [1]}}],
    },
    {
        "id": "call-not-closed-before-the-next",
        "text": B + f"{CB}function{SEP}a\n```json\n{{}}\n```\n" + call("b", '{"k": "v"}') + E,
        "calls": [{"name": "b", "arguments": {"k": "v"}}],
    },
    {
        "id": "stray-opener-before-a-good-section",
        "text": "oops " + B + " never mind. " + B + call("a", '{"n": 1}') + E,
        "calls": [{"name": "a", "arguments": {"n": 1}}],
    },
    {
        "id": "name-with-spaces",
        "text": B + call("get weather", "{}") + "\n" + call("ok", "{}") + E,
        "calls": [{"name": "ok", "arguments": {}}],
    },
    {"id": "repeated-openers", "text": (B + CB) * 25, "calls": []},
]
