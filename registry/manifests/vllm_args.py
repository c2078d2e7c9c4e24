"""Finding the vLLM server in a container and reading its command-line flags.

A container runs vLLM when its command and args (Kubernetes expands ``$(VAR)`` in both
from the container's env) invoke ``vllm serve [MODEL]`` or ``python3 -m
vllm.entrypoints.openai.api_server``, directly or in a ``sh -c`` script, or when an
image whose entrypoint is vLLM (vllm/vllm-openai) gets only args. Flags are read as
vLLM's parser reads them: ``--flag value``, ``--flag=value``, ``_`` and ``-`` alike in
long names, ``-tp``/``-pp`` for the parallel sizes, ``--enable-x`` / ``--no-enable-x``
booleans, the last occurrence winning.

vLLM takes none of its engine arguments from environment variables (its ``VLLM_*``
variables tune the runtime, not batching or memory), so the environment matters only
through the references the command makes to it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from registry.manifests.loading import Node, Where

VLLM_MODULES = frozenset(
    {"vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server", "huggingfaceserver"}
)
SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh"})
SHORT_FLAGS = {"tp": "tensor-parallel-size", "pp": "pipeline-parallel-size", "q": "quantization"}
BOOLEAN_FLAGS = frozenset({"enable-prefix-caching", "enable-chunked-prefill"})
# What separates commands in a shell script: the vLLM invocation is one of them.
SEPARATOR_CHARS = ";&|()\n"

_K8S_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_SHELL_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class Word:
    """One word of a command line and the manifest item it was written in."""

    text: str
    node: Node
    line: int | None = None  # within a block-scalar script, the word's own line

    @property
    def where(self) -> Where:
        where = self.node.where
        return where if self.line is None else where._replace(line=self.line)


@dataclass(frozen=True)
class Flag:
    name: str  # as written, for messages
    value: str | bool
    word: Word

    @property
    def node(self) -> Node:
        return self.word.node


@dataclass(frozen=True)
class VllmCommand:
    container: Node
    model: Word | None
    flags: dict[str, Flag]  # by canonical name: no dashes in front, "-" for "_"
    # A KServe ServingRuntime's container, which KServe merges the InferenceService's
    # model container into: what the model container leaves out comes from it.
    runtime: Node | None = None

    def holding(self, *keys: str) -> Node:
        """The container that states any of ``keys``: the model container over its
        runtime's, as KServe's strategic merge takes a field the model sets."""
        for container in (self.container, self.runtime):
            if container is not None and any(container.child(k) is not None for k in keys):
                return container
        return self.container


def container_env(
    container: Node, inherited: dict[str, str | None] | None = None
) -> dict[str, str | None]:
    """Literal env values by name; None for values from Secrets, ConfigMaps or fields,
    which the manifests do not show. ``inherited``: variables merged in before these
    (a KServe runtime's), which these override by name."""
    env: dict[str, str | None] = dict(inherited or {})
    for item in container.items("env"):
        name = item.string("name")
        if name is None:
            item.fail("an env entry needs a name")
        value = item.string("value")
        # Kubernetes expands references to earlier variables in a value too.
        env[name.value] = None if value is None else expand_k8s(value.value, env)
    return env


def expand_k8s(text: str, env: dict[str, str | None]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: ``$$`` is a literal ``$``, unknown references stay."""

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        value = env.get(match.group(1))
        return match.group(0) if value is None else value

    return _K8S_REF.sub(sub, text)


def _expand_shell(text: str, env: dict[str, str | None]) -> str:
    def sub(match: re.Match[str]) -> str:
        value = env.get(match.group(1) or match.group(2))
        return match.group(0) if value is None else value

    return _SHELL_REF.sub(sub, text)


def _script_words(
    script: Word, env: dict[str, str | None], positional: list[Word] | None = None
) -> list[Word]:
    """The words of a ``sh -c`` script, with separators as words of their own.

    ``positional``: the words after ``sh -c SCRIPT NAME``, the script's ``$1``...: a ``$@``
    or ``$*`` word stands for them, each keeping where it was written (KServe's vLLM
    runtime passes an InferenceService's args to its script that way)."""
    # A continued line (backslash, newline) is one command line: two spaces for the two
    # characters keep every offset, so each word is found in the script where it stands.
    flat = script.text.replace("\\\n", "  ")
    lexer = shlex.shlex(flat, posix=True, punctuation_chars=SEPARATOR_CHARS)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = "#"
    first = script.node.manifest.text_lines.get(script.node.path)
    words: list[Word] = []
    cursor = 0  # where the previous word ends in the script
    try:
        for token in lexer:
            # A quoted word is not written as it reads: it keeps the previous word's line.
            found = flat.find(token, cursor)
            cursor = cursor if found < 0 else found + len(token)
            start = cursor if found < 0 else found
            line = None if first is None else first + script.text.count("\n", 0, start)
            if token in ("$@", "$*"):
                words.extend(positional or [])
                continue
            words.append(Word(_expand_shell(token, env), script.node, line))
        return words
    except ValueError as exc:  # unbalanced quotes
        script.node.fail(f"the shell script cannot be read: {exc}")


def _separator(text: str) -> bool:
    """``;``, ``&&``, ``|``, a newline...: shlex joins adjacent ones into one token."""
    return bool(text) and set(text) <= set(SEPARATOR_CHARS)


def _shell_script(words: list[Word]) -> tuple[Word, list[Word]] | None:
    """The script of ``sh -c SCRIPT [NAME ARGS...]`` (also ``-ec``, ``-xc``), if that is
    the command, and the ARGS it gets as ``$1``..."""
    if not words or PurePosixPath(words[0].text).name not in SHELLS:
        return None
    for index, word in enumerate(words[1:], start=1):
        if word.text.startswith("-") and "c" in word.text[1:] and not word.text.startswith("--"):
            if index + 1 >= len(words):
                return None
            return words[index + 1], words[index + 3 :]
        if not word.text.startswith("-"):
            return None
    return None


def _invocation(words: list[Word]) -> int | None:
    """Index of the first word after the vLLM invocation (``vllm serve``, ``-m module``)."""
    for index, word in enumerate(words):
        name = PurePosixPath(word.text).name
        following = words[index + 1].text if index + 1 < len(words) else ""
        if name == "vllm" and following == "serve":
            return index + 2
        if word.text == "-m" and following in VLLM_MODULES:
            return index + 2
    return None


def _command(words: list[Word], start: int) -> list[Word]:
    """The words from ``start`` to the end of that shell command."""
    end = start
    while end < len(words) and not _separator(words[end].text):
        end += 1
    return words[start:end]


# The flags a plan reads, and those that say what is served (compared with the provider,
# registry.manifests.identity). vLLM releases whose parser allows abbreviations
# (argparse's default) read ``--max-num-seq`` as ``--max-num-seqs``: a prefix of exactly
# one of these is read as that flag.
PLAN_FLAGS = frozenset(
    {
        "model",
        "served-model-name",
        "quantization",
        "dtype",
        "kv-cache-dtype",
        "tensor-parallel-size",
        "pipeline-parallel-size",
        "max-num-seqs",
        "max-num-batched-tokens",
        "gpu-memory-utilization",
        "max-model-len",
        "block-size",
        "scheduling-policy",
        *BOOLEAN_FLAGS,
    }
)


def canonical(flag: str) -> str:
    name = flag.lstrip("-").replace("_", "-").lower()
    name = SHORT_FLAGS.get(name, name)
    if name not in PLAN_FLAGS:
        completions = [known for known in PLAN_FLAGS if known.startswith(name)]
        if len(completions) == 1 and len(name) > len("max-"):
            return completions[0]
    return name


def parse_flags(words: list[Word]) -> tuple[Word | None, dict[str, Flag]]:
    """A leading positional model (``vllm serve MODEL``), then every flag."""
    model: Word | None = None
    flags: dict[str, Flag] = {}
    index = 0
    if words and not words[0].text.startswith("-"):
        model, index = words[0], 1
    while index < len(words):
        word = words[index]
        index += 1
        if not word.text.startswith("-") or word.text == "-":
            continue  # a stray positional (a second served model name, say)
        written, has_value, inline = word.text.partition("=")
        name = canonical(written)
        value: str | bool
        if name.startswith("no-") and name[3:] in BOOLEAN_FLAGS:
            name, value = name[3:], False
        elif name in BOOLEAN_FLAGS:
            value = True
            following = words[index].text.lower() if index < len(words) else ""
            if has_value:
                value = _boolean(inline, word, written)
            elif following in {"true", "false"}:  # older vLLM took an optional value
                value = following == "true"
                index += 1
        elif has_value:
            value = inline
        elif index < len(words) and not words[index].text.startswith("-"):
            value = words[index].text
            index += 1
        else:
            value = True  # a switch vLLM has that the plan does not read
        flags[name] = Flag(written, value, word)
    if model is None and "model" in flags and isinstance(flags["model"].value, str):
        model = replace(flags["model"].word, text=flags["model"].value)
    return model, flags


def _boolean(text: str, word: Word, written: str) -> bool:
    if text.lower() not in {"true", "false"}:
        word.node.fail(f"{written}: {text!r} is not true or false")
    return text.lower() == "true"


def command_words(items: list[Node], env: dict[str, str | None]) -> list[Word]:
    """The words a command list runs, ``$(VAR)`` expanded, a ``sh -c`` script split."""
    words = [Word(expand_k8s(n.value, env), n) for n in items]
    script = _shell_script(words)
    return words if script is None else _script_words(script[0], env, script[1])


def vllm_command(
    container: Node, *, entrypoint_is_vllm: bool = False, runtime: Node | None = None
) -> VllmCommand | None:
    """The vLLM server this container runs, or None if it runs something else.

    ``entrypoint_is_vllm``: the image's own entrypoint is the vLLM server (vllm-openai
    images, KServe's huggingface runtime), so args alone are its arguments.
    ``runtime``: the KServe ServingRuntime container ``container`` (an InferenceService's
    model) is merged into. KServe merges them as a strategic merge patch, except that
    args are concatenated, the runtime's first: the model's command and image replace
    the runtime's, its env overrides the runtime's by name.
    """
    env = container_env(container, container_env(runtime) if runtime is not None else None)
    command = container.strings("command") or (runtime.strings("command") if runtime else [])
    args = (runtime.strings("args") if runtime else []) + container.strings("args")
    words = command_words(command + args, env)
    start = _invocation(words)
    if start is None:
        image = container.string("image") or (runtime.string("image") if runtime else None)
        vllm_image = entrypoint_is_vllm or (image is not None and "vllm" in image.value.lower())
        if command or not vllm_image:
            return None
        start = 0  # args only: the image's entrypoint runs vLLM
    model, flags = parse_flags(_command(words, start))
    return VllmCommand(container, model, flags, runtime)
