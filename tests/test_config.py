import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextengine import Config, ConfigError
from contextengine.config import COMPONENT_FLAGS


def test_defaults():
    c = Config()
    assert (c.context_window, c.compaction_trigger, c.keep_rounds, c.history_mode) == (
        200_000,
        0.8,
        10,
        "full",
    )
    assert all(getattr(c.flags, f) for f in COMPONENT_FLAGS)


def test_load_toml_and_yaml(tmp_path):
    (tmp_path / "c.toml").write_text(
        "context_window = 32000\ndiversity = false\nhistory_mode = 'full'\n"
    )
    c = Config.load(tmp_path / "c.toml", env={})
    assert c.context_window == 32000 and not c.flags.diversity and c.history_mode == "full"
    (tmp_path / "c.yaml").write_text("keep_rounds: 4\ncompaction: false\n")
    c = Config.load(tmp_path / "c.yaml", env={})
    assert c.keep_rounds == 4 and not c.flags.compaction


def test_env_overrides_file(tmp_path):
    (tmp_path / "c.toml").write_text("diversity = false\n")
    c = Config.load(
        tmp_path / "c.toml",
        env={"CONTEXTENGINE_DIVERSITY": "yes", "CONTEXTENGINE_KEEP_ROUNDS": "3"},
    )
    assert c.flags.diversity and c.keep_rounds == 3


def test_config_file_from_env_variable(tmp_path):
    (tmp_path / "c.toml").write_text("keep_rounds = 7\n")
    assert Config.load(env={"CONTEXTENGINE_CONFIG": str(tmp_path / "c.toml")}).keep_rounds == 7


def test_master_switch_turns_every_component_off():
    c = Config(enabled=False)
    assert not any(getattr(c.flags, f) for f in COMPONENT_FLAGS)
    assert c.effective_history_mode == "full"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("contxt_window = 5\n", "unknown setting 'contxt_window'"),
        ("keep_rounds = 0\n", "setting 'keep_rounds'"),
        ("history_mode = 'zip'\n", "setting 'history_mode'"),
        ("this is = not toml [", "not valid .toml"),
    ],
)
def test_bad_files_give_one_clear_line(tmp_path, content, message):
    path = tmp_path / "c.toml"
    path.write_text(content)
    with pytest.raises(ConfigError) as info:
        Config.load(path, env={})
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_bad_env_values_are_errors():
    with pytest.raises(
        ConfigError, match=r"^environment variable CONTEXTENGINE_DIVERSITY: .*boolean"
    ):
        Config.load(env={"CONTEXTENGINE_DIVERSITY": "maybe"})
    with pytest.raises(ConfigError, match="unknown setting 'nope'"):
        Config.load(env={"CONTEXTENGINE_NOPE": "1"})


def test_the_tooling_variables_docs_name_are_no_settings_and_no_errors():
    env = {"CONTEXTENGINE_VLLM_PYTHON": "/opt/vllm/bin/python", "CONTEXTENGINE_STRESS": "1"}
    assert Config.load(env=env) == Config()
    assert Config.load(env={"CONTEXTENGINE_API_KEY": "sk-1"}).api_key == "sk-1"
    assert "sk-1" not in repr(Config(api_key="sk-1")), "the key never shows in a repr"


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        Config.load(tmp_path / "absent.toml", env={})


def test_with_flags_validates():
    assert not Config().with_flags(recitation=False).flags.recitation
    with pytest.raises(ConfigError):
        Config().with_flags(recitaton=False)


def test_a_flag_spec_sets_switches_and_settings_then_the_options():
    spec = "diversity=off, history_mode=full,overhead_share=0.01,keep_rounds=9"
    c = Config().with_flag_spec(spec, keep_rounds=2, context_window=None)
    assert not c.flags.diversity and c.history_mode == "full" and c.overhead_share == 0.01
    assert c.keep_rounds == 2, "an option given on its own wins over the spec"
    assert c.context_window == Config().context_window, "None: the option was not given"
    assert Config().with_flag_spec("scrub=ON").flags.scrub
    plain = Config()
    assert plain.with_flag_spec(" , ") is plain


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("diversity", "^--flags: 'diversity' is not name=value$"),
        ("diversity=maybe", "^--flags: diversity='maybe': expected on or off$"),
        ("nonsense=1", "^--flags: unknown setting 'nonsense'"),
        ("keep_rounds=-1", "^--flags: setting 'keep_rounds'"),
    ],
)
def test_a_bad_flag_spec_names_the_command_line_option(spec, message):
    with pytest.raises(ConfigError, match=message):
        Config().with_flag_spec(spec)


def test_a_bad_value_is_blamed_on_the_source_it_came_from(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("keep_rounds = 3\nmax_retries = 2\n")
    bad_env = {"CONTEXTENGINE_KEEP_ROUNDS": "0"}
    with pytest.raises(ConfigError) as info:
        Config.load(config, env=bad_env)
    assert str(info.value).startswith("environment variable CONTEXTENGINE_KEEP_ROUNDS: ")
    assert str(config) not in str(info.value), "the file holds a good value"
    config.write_text("keep_rounds = 0\n")
    with pytest.raises(ConfigError) as info:
        Config.load(config, env={"CONTEXTENGINE_MAX_RETRIES": "3"})
    assert str(info.value).startswith(f"config file {config}: setting 'keep_rounds': ")
    with pytest.raises(ConfigError) as info:
        Config.load(env={}, cli={"max_retries": ("--retries", 99), "keep_rounds": ("-k", None)})
    assert str(info.value).startswith("--retries: ")


def test_later_sources_win_file_then_env_then_command_line(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("keep_rounds: 3\nmax_retries: 1\nmax_steps: 7\n")
    env = {"CONTEXTENGINE_MAX_RETRIES": "4", "CONTEXTENGINE_MAX_STEPS": "8"}
    loaded = Config.load(config, env=env, cli={"max_steps": ("--steps", 9)})
    assert (loaded.keep_rounds, loaded.max_retries, loaded.max_steps) == (3, 4, 9)


def test_config_ignores_the_environment_unless_loaded(monkeypatch):
    monkeypatch.setenv("CONTEXTENGINE_KEEP_ROUNDS", "3")
    assert Config().keep_rounds == 10 and Config(keep_rounds=5).keep_rounds == 5
    assert Config.load().keep_rounds == 3


@given(
    bad_in=st.sampled_from(["file", "env", "cli"]),
    bad=st.integers(max_value=0),
    good=st.integers(min_value=1, max_value=1000),
)
@settings(max_examples=30, deadline=None)
def test_the_error_names_the_source_holding_the_bad_value(bad_in, bad, good):
    values = {src: (bad if src == bad_in else good) for src in ("file", "env", "cli")}
    # a later source only overrides when the bad value sits in it or after it
    env = {"CONTEXTENGINE_KEEP_ROUNDS": str(values["env"])} if bad_in != "file" else {}
    cli = {"keep_rounds": ("--keep-rounds", values["cli"] if bad_in == "cli" else None)}
    with tempfile.TemporaryDirectory() as folder, pytest.raises(ConfigError) as info:
        path = Path(folder) / "c.toml"
        path.write_text(f"keep_rounds = {values['file']}\n")
        Config.load(path, env=env, cli=cli)
    expected = {
        "file": f"config file {path}: setting 'keep_rounds': ",
        "env": "environment variable CONTEXTENGINE_KEEP_ROUNDS: ",
        "cli": "--keep-rounds: ",
    }[bad_in]
    assert str(info.value).startswith(expected)


def test_sandbox_unix_sockets_is_false_true_or_a_list_from_a_file_or_the_environment(
    tmp_path: Path,
) -> None:
    (tmp_path / "c.toml").write_text('sandbox_unix_sockets = ["/run/db.sock", "x.sock"]\n')
    assert Config.load(tmp_path / "c.toml", env={}).sandbox_unix_sockets == (
        "/run/db.sock",
        "x.sock",
    )
    variable = "CONTEXTENGINE_SANDBOX_UNIX_SOCKETS"
    assert Config.load(env={variable: "true"}).sandbox_unix_sockets is True
    assert Config.load(env={variable: "off"}).sandbox_unix_sockets is False
    assert Config.load(env={variable: "a.sock, b.sock"}).sandbox_unix_sockets == (
        "a.sock",
        "b.sock",
    )
    assert Config().sandbox_unix_sockets is False


def test_flags_are_typed_and_the_master_switch_turns_the_opt_in_ones_off_too(tmp_path):
    asked = {"code_map": True, "subagents": True, "memory_git": True}
    on = Config(**asked).flags
    assert on.code_map and on.subagents and on.memory_git and on.pruning
    assert not any(Config(enabled=False, **asked).flags.model_dump().values())
    with pytest.raises(AttributeError):
        _ = Config().flags.prunning  # a misspelt flag is no flag
    path = tmp_path / "c.toml"
    path.write_text("prunning = false\n")
    with pytest.raises(ConfigError, match=r"unknown setting 'prunning'") as error:
        Config.load(path, env={})
    assert "\n" not in str(error.value)


def test_a_component_gets_its_settings_with_the_flags_in_force():
    from contextengine.compress.compaction import CompactionSettings
    from contextengine.context.builder import BuilderSettings

    config = Config(keep_rounds=3, history_mode="compressed", compaction=False)
    assert config.settings(CompactionSettings) == CompactionSettings(
        compaction=False, keep_rounds=3
    )
    assert config.settings(BuilderSettings).history_mode == "compressed"
    off = config.with_flags(enabled=False, compaction=True)
    assert off.settings(BuilderSettings) == BuilderSettings(
        scrub=False, code_law=False, cache_breakpoints=False, history_mode="full"
    )
    assert not off.settings(CompactionSettings).compaction
