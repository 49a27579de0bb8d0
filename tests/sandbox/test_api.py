"""hermes-sandbox's public surface: the names it exports and its exception tree."""

from __future__ import annotations

import inspect

import pytest

import hermes_sandbox
from hermes_sandbox import _errors as errors
from hermes_sandbox.tools import web

EXPECTED_ALL = [
    "DEFAULT_PATH",
    "RUN_ID",
    "BackendUnavailableError",
    "BrowserPageError",
    "BrowserUnavailableError",
    "BuildNetwork",
    "ConformanceError",
    "ExecResult",
    "FileChangedError",
    "ImageSource",
    "ImageUnavailableError",
    "PreparedImage",
    "Sandbox",
    "SandboxClosedError",
    "SandboxError",
    "SandboxOptions",
    "SandboxPool",
    "SandboxStartError",
    "SandboxTool",
    "ToolContext",
    "ToolContextError",
    "UnknownBackendError",
    "WebProviderError",
    "__version__",
    "bind_sandbox_pool",
    "create_sandbox",
    "default_backends",
    "finish",
    "image_references",
    "register_backend",
    "rewrite_references",
    "sandbox_tools",
    "stop_on_sigterm",
]


def test_all_is_pinned_and_sorted() -> None:
    assert hermes_sandbox.__all__ == EXPECTED_ALL

    # Sorted as ruff sorts __all__ (RUF022): constants, then classes, then the rest.
    def group(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert sorted(EXPECTED_ALL, key=group) == EXPECTED_ALL
    for name in EXPECTED_ALL:
        assert hasattr(hermes_sandbox, name), name


def package_exceptions() -> list[type[BaseException]]:
    """Every exception class defined in hermes_sandbox._errors."""
    return [
        obj
        for _, obj in inspect.getmembers(errors, inspect.isclass)
        if issubclass(obj, BaseException) and obj.__module__ == errors.__name__
    ]


def test_every_error_of_the_package_is_a_sandbox_error() -> None:
    found = package_exceptions()
    assert len(found) >= 10
    for cls in found:
        assert issubclass(cls, errors.SandboxError), cls


@pytest.mark.parametrize(
    ("cls", "second"),
    [
        (errors.UnknownBackendError, KeyError),
        (errors.WebProviderError, RuntimeError),
        (errors.BrowserUnavailableError, RuntimeError),
        (errors.BrowserPageError, RuntimeError),
        (errors.ToolContextError, RuntimeError),
        (errors.ConformanceError, AssertionError),
    ],
)
def test_builtin_second_bases_callers_rely_on_are_kept(
    cls: type[BaseException], second: type[BaseException]
) -> None:
    assert issubclass(cls, errors.SandboxError)
    assert issubclass(cls, second)


def test_errors_are_reexported_where_their_users_look() -> None:
    from hermes_sandbox import tools
    from hermes_sandbox.tools import _browser as browser

    assert web.WebProviderError is errors.WebProviderError
    assert tools.WebProviderError is errors.WebProviderError
    assert browser.BrowserPageError is errors.BrowserPageError
    assert browser.BrowserUnavailableError is errors.BrowserUnavailableError


def test_unknown_backend_lists_the_known_ones() -> None:
    with pytest.raises(errors.SandboxError) as caught:
        hermes_sandbox.create_sandbox("hermes-no-such-backend")
    assert isinstance(caught.value, KeyError)
    assert "known backends: " in str(caught.value)
    assert "local" in caught.value.known  # type: ignore[attr-defined]


def test_web_module_keeps_its_public_names() -> None:
    for name in (
        "DirectWebProvider",
        "FirecrawlProvider",
        "TavilyProvider",
        "WebPage",
        "WebProvider",
        "WebProviderError",
        "WebSearchResult",
        "check_url",
        "extract_web",
        "html_to_text",
        "search_web",
        "web_provider_from_env",
        "web_tools",
    ):
        assert name in web.__all__
        assert getattr(web, name) is not None


def test_one_check_of_backend_options_for_every_backend() -> None:
    from hermes_sandbox.backends.option_check import check_extra

    check_extra("toy", {"a": 1}, ["a", "b"])
    with pytest.raises(ValueError, match=r"^toy backend: unknown option\(s\) 'c', 'd'; "):
        check_extra("toy", {"a": 1, "d": 2, "c": 3}, ["a", "b"])
    with pytest.raises(ValueError, match=r"known toy options: \(none\)$"):
        check_extra("toy", {"c": 3}, [])


def test_the_conformance_suite_does_not_need_pytest() -> None:
    import subprocess
    import sys

    code = (
        "import sys, hermes_sandbox.testing\n"
        "assert 'pytest' not in sys.modules, 'hermes_sandbox.testing imported pytest'\n"
        "print(len(hermes_sandbox.testing.CHECKS))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "37"
