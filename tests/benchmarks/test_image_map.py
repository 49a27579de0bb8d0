"""Base images mapped to local tags for machines that reach no registry."""

from __future__ import annotations

import pytest

from hermes_benchmarks import ImageMap, ImageMapError, normalize_image

LOCAL = "hermes-sandbox/debian:bookworm"


@pytest.mark.parametrize(
    ("given", "short"),
    [
        ("python", "python:latest"),
        ("python:3.13-slim", "python:3.13-slim"),
        ("docker.io/library/python:3.13-slim", "python:3.13-slim"),
        ("docker.io/org/tool", "org/tool:latest"),
        ("localhost:5000/img", "localhost:5000/img:latest"),
        ("ghcr.io/x/y@sha256:abc", "ghcr.io/x/y@sha256:abc"),
    ],
)
def test_normalize(given: str, short: str) -> None:
    assert normalize_image(given) == short


def test_parse_and_resolve_in_short_form() -> None:
    image_map = ImageMap.parse([f"python:3.13-slim={LOCAL}", f"ubuntu={LOCAL}"])
    assert image_map.resolve("docker.io/library/python:3.13-slim") == LOCAL
    assert image_map.resolve("ubuntu:latest") == LOCAL
    assert image_map.resolve("alpine:3") == "alpine:3"


@pytest.mark.parametrize("entry", ["python", "=x", "python=", " = "])
def test_a_malformed_entry_is_named(entry: str) -> None:
    with pytest.raises(ImageMapError, match="is not FROM=TO"):
        ImageMap.parse([entry])


def test_one_image_mapped_two_ways_is_refused() -> None:
    with pytest.raises(ImageMapError, match="maps python:3 twice"):
        ImageMap.parse(["python:3=a", "python:3=b"])


def test_rewrite_maps_from_lines_and_lists_bases() -> None:
    dockerfile = (
        "ARG BASE=python:3.13-slim\n"
        "FROM ${BASE} AS build\n"
        "RUN make\n"
        "from --platform=linux/amd64 ubuntu:24.04\n"
        "COPY --from=build /out /out\n"
        "FROM build AS again\n"
        "FROM scratch\n"
        "FROM alpine:3.20\n"
    )
    image_map = ImageMap.parse([f"python:3.13-slim={LOCAL}", f"ubuntu:24.04={LOCAL}"])
    result = image_map.rewrite_dockerfile(dockerfile)
    assert result.text.splitlines() == [
        "ARG BASE=python:3.13-slim",
        f"FROM {LOCAL} AS build",
        "RUN make",
        f"from --platform=linux/amd64 {LOCAL}",
        "COPY --from=build /out /out",
        "FROM build AS again",
        "FROM scratch",
        "FROM alpine:3.20",
    ]
    assert result.bases == (LOCAL, "alpine:3.20")
    assert result.unresolved == ()


def test_an_unresolvable_variable_is_reported_and_left_alone() -> None:
    result = ImageMap.parse([]).rewrite_dockerfile("FROM $IMAGE\nRUN true\n")
    assert result.text == "FROM $IMAGE\nRUN true\n"
    assert result.bases == ()
    assert result.unresolved == ("$IMAGE",)


def test_crlf_endings_are_kept() -> None:
    result = ImageMap.parse([f"python={LOCAL}"]).rewrite_dockerfile("FROM python\r\nRUN x\r\n")
    assert result.text == f"FROM {LOCAL}\r\nRUN x\r\n"


def test_copy_from_and_run_mount_from_are_rewritten_but_stages_are_not() -> None:
    image_map = ImageMap.parse([f"vendor/tools:7={LOCAL}", f"python:3.13-slim={LOCAL}"])
    dockerfile = (
        "FROM python:3.13-slim AS build\n"
        "COPY --from=vendor/tools:7 /a /b\n"
        "COPY --from=build /c /d\n"
        "COPY --from=0 /e /f\n"
        "RUN --mount=type=bind,from=vendor/tools:7,target=/t true\n"
        "FROM build\n"
    )
    rewritten = image_map.rewrite_dockerfile(dockerfile)
    assert rewritten.text == (
        f"FROM {LOCAL} AS build\n"
        f"COPY --from={LOCAL} /a /b\n"
        "COPY --from=build /c /d\n"
        "COPY --from=0 /e /f\n"
        f"RUN --mount=type=bind,from={LOCAL},target=/t true\n"
        "FROM build\n"
    )
    assert rewritten.bases == (LOCAL,)


def test_unmapped_references_are_all_reported() -> None:
    rewritten = ImageMap().rewrite_dockerfile(
        "FROM base:1\nCOPY --from=tools:2 / /\nRUN --mount=from=cache:3 true\n"
    )
    assert rewritten.bases == ("base:1", "tools:2", "cache:3")
    unresolved = ImageMap().rewrite_dockerfile("FROM base:1\nCOPY --from=$TOOLS / /\n")
    assert unresolved.unresolved == ("$TOOLS",)
