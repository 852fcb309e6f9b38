"""Reading connector configurations from .properties, .json and .yaml, with env expansion and validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkcdc.cli.config_files import ConfigFileError, load_config, read_config_file

REQUIRED = {"database.hostname": "db.example", "database.user": "cdc", "database.dbname": "app", "topic.prefix": "srv"}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def properties_text(extra: str = "") -> str:
    return "".join(f"{k}={v}\n" for k, v in REQUIRED.items()) + extra


# -- .properties -------------------------------------------------------------------------------------


def test_properties_file_with_escapes_continuations_and_env(tmp_path: Path) -> None:
    text = properties_text(
        "database.password=${env:CDC_PASSWORD}\n"
        "table.include.list = public\\\\.orders,\\\n    public\\\\.customers\n"
        "unavailable.value.placeholder=\\u00e9\\=x\n"
        "name: my-connector\n"
    )
    loaded = load_config(write(tmp_path, "c.properties", text), environ={"CDC_PASSWORD": "s3cr=t"})
    assert loaded.config.get("database.password") == "s3cr=t"
    assert loaded.config.get_list("table.include.list") == ["public\\.orders", "public\\.customers"]
    assert loaded.config.get("unavailable.value.placeholder") == "é=x"
    assert loaded.config.get("name") == "my-connector"
    assert loaded.lines["table.include.list"] == 6
    assert loaded.warnings == []


def test_properties_in_latin1_are_read_as_java_would(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_bytes(properties_text("unavailable.value.placeholder=caf\xe9\n").encode("iso-8859-1"))
    assert load_config(path).config.get("unavailable.value.placeholder") == "café"


def test_validation_error_names_file_line_and_property(tmp_path: Path) -> None:
    path = write(tmp_path, "c.properties", properties_text("\n# comment\ndecimal.handling.mode=exact\n"))
    with pytest.raises(ConfigFileError) as info:
        load_config(path)
    assert info.value.property == "decimal.handling.mode"
    assert info.value.line == 7
    assert str(info.value).startswith(f"{path}:7: decimal.handling.mode: 'exact' is not one of")


def test_missing_required_property_names_it(tmp_path: Path) -> None:
    text = "".join(f"{k}={v}\n" for k, v in REQUIRED.items() if k != "topic.prefix")
    with pytest.raises(ConfigFileError) as info:
        load_config(write(tmp_path, "c.properties", text))
    assert info.value.property == "topic.prefix"
    assert "is required" in str(info.value) and "c.properties" in str(info.value)


def test_malformed_properties_name_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "c.properties", properties_text("a=\\uZZZZ\n"))
    with pytest.raises(ConfigFileError) as info:
        load_config(path)
    assert info.value.line == 5 and info.value.property is None
    assert str(info.value).startswith(f"{path}:5: malformed \\uXXXX escape")


def test_repeated_and_unknown_properties_are_warnings(tmp_path: Path) -> None:
    path = write(tmp_path, "c.properties", properties_text("slot.name=a\nslot.name=b\nslot.nmae=c\ncolumn.mask.with.10.chars=public.t.c\n"))
    loaded = load_config(path)
    assert loaded.config.get("slot.name") == "b"
    assert loaded.warnings == [
        "slot.name is set on line 5 and again on line 6; the last value wins",
        "slot.nmae (line 7): is not a property sparkcdc knows; did you mean slot.name? (ignored)",
    ]


# -- environment references ----------------------------------------------------------------------------


def test_env_forms_and_literal_dollar_braces(tmp_path: Path) -> None:
    text = properties_text(
        "database.password=${PW}\n"
        "database.sslcert=${env::CERT_DIR}/client.crt\n"
        "unavailable.value.placeholder=$${env:NOT_EXPANDED}\n"
        "heartbeat.action.query=SELECT '${1,2}'\n"
    )
    loaded = load_config(write(tmp_path, "c.properties", text), environ={"PW": "pw", "CERT_DIR": "/etc/certs"})
    assert loaded.config.get("database.password") == "pw"
    assert loaded.config.get("database.sslcert") == "/etc/certs/client.crt"
    assert loaded.config.get("unavailable.value.placeholder") == "${env:NOT_EXPANDED}"
    assert loaded.config.get("heartbeat.action.query") == "SELECT '${1,2}'"


def test_missing_env_variable_names_property_and_file(tmp_path: Path) -> None:
    path = write(tmp_path, "c.properties", properties_text("database.password=${env:NOPE_NOT_SET}\n"))
    with pytest.raises(ConfigFileError) as info:
        load_config(path, environ={})
    assert info.value.property == "database.password" and info.value.line == 5
    assert "'NOPE_NOT_SET'" in str(info.value) and str(path) in str(info.value)


def test_other_config_providers_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "c.properties", properties_text("database.password=${file:/run/secrets.properties:pw}\n"))
    with pytest.raises(ConfigFileError, match=r"database\.password: config provider 'file'"):
        load_config(path, environ={})


# -- .json -----------------------------------------------------------------------------------------------


def test_json_kafka_connect_request_shape(tmp_path: Path) -> None:
    body = {"name": "inventory", "config": {**REQUIRED, "database.port": 6543, "tombstones.on.delete": False,
                                            "database.password": None}}
    loaded = load_config(write(tmp_path, "c.json", json.dumps(body)))
    assert loaded.properties["name"] == "inventory"
    assert loaded.properties["database.port"] == "6543"
    assert loaded.properties["tombstones.on.delete"] == "false"
    assert loaded.properties["database.password"] == ""
    assert loaded.config.get_int("database.port") == 6543


def test_json_numbers_keep_their_text(tmp_path: Path) -> None:
    path = write(tmp_path, "c.json", '{"database.port": 123, "x.y": 1.50, "z": 1e3}')
    raw = read_config_file(path)
    assert raw.properties == {"database.port": "123", "x.y": "1.50", "z": "1e3"}


def test_json_flat_object(tmp_path: Path) -> None:
    loaded = load_config(write(tmp_path, "c.json", json.dumps({**REQUIRED, "slot.drop.on.stop": True})))
    assert loaded.config.get_bool("slot.drop.on.stop") is True


def test_json_name_mismatch_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "c.json", json.dumps({"name": "a", "config": {**REQUIRED, "name": "b"}}))
    with pytest.raises(ConfigFileError) as info:
        load_config(path)
    assert info.value.property == "name"


def test_json_properties_beside_config_are_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "c.json", json.dumps({"name": "a", "slot.name": "x", "config": REQUIRED}))
    with pytest.raises(ConfigFileError, match="'slot.name' beside 'config'"):
        load_config(path)


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "c.json", '{\n  "name": "a",\n  "config": {"x": 1,}\n}\n')
    with pytest.raises(ConfigFileError) as info:
        load_config(path)
    assert info.value.line == 3
    assert str(info.value).startswith(f"{path}:3: invalid JSON")


def test_json_nested_value_names_the_property(tmp_path: Path) -> None:
    path = write(tmp_path, "c.json", json.dumps({**REQUIRED, "table.include.list": ["a", "b"]}))
    with pytest.raises(ConfigFileError) as info:
        load_config(path)
    assert info.value.property == "table.include.list" and "comma-separated" in str(info.value)


def test_json_top_level_must_be_an_object(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="expected a JSON object"):
        load_config(write(tmp_path, "c.json", "[1, 2]"))


# -- .yaml -----------------------------------------------------------------------------------------------


def test_yaml_mapping_keeps_scalars_as_written(tmp_path: Path) -> None:
    text = """
database.hostname: db.example
database.port: 5432
database.user: cdc
database.password: 0123
database.dbname: app
topic.prefix: no
tombstones.on.delete: False
slot.drop.on.stop: true
database.sslcert: ~
"""
    loaded = load_config(write(tmp_path, "c.yaml", text))
    assert loaded.properties["database.password"] == "0123"  # not octal 83
    assert loaded.properties["topic.prefix"] == "no"  # not YAML 1.1's false
    assert loaded.properties["tombstones.on.delete"] == "false"
    assert loaded.properties["slot.drop.on.stop"] == "true"
    assert loaded.properties["database.sslcert"] == ""
    assert loaded.lines["database.password"] == 5


def test_yaml_kafka_connect_shape_with_env(tmp_path: Path) -> None:
    text = "name: inventory\nconfig:\n" + "".join(f"  {k}: {v}\n" for k, v in REQUIRED.items()) + "  database.password: ${env:PW}\n"
    loaded = load_config(write(tmp_path, "c.yml", text), environ={"PW": "pw"})
    assert loaded.config.get("name") == "inventory"
    assert loaded.config.get("database.password") == "pw"
    assert loaded.lines["database.password"] == 7


def test_yaml_validation_error_names_line(tmp_path: Path) -> None:
    text = "".join(f"{k}: {v}\n" for k, v in REQUIRED.items()) + "snapshot.mode: custom\n"
    path = write(tmp_path, "c.yaml", text)
    with pytest.raises(ConfigFileError) as info:
        load_config(path)
    assert info.value.property == "snapshot.mode" and info.value.line == 5
    assert str(info.value).startswith(f"{path}:5: snapshot.mode: custom snapshotters are Java classes")


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "c.yaml", "a: 1\nb: [1, 2\nc: 3\n")
    with pytest.raises(ConfigFileError) as info:
        load_config(path)
    assert info.value.line is not None and info.value.line >= 2
    assert str(info.value).startswith(f"{path}:{info.value.line}: invalid YAML")


def test_yaml_nested_mapping_is_an_error_naming_the_key(tmp_path: Path) -> None:
    path = write(tmp_path, "c.yaml", "database:\n  hostname: x\n")
    with pytest.raises(ConfigFileError) as info:
        load_config(path)
    assert info.value.property == "database" and info.value.line == 1


@pytest.mark.parametrize("text, problem", [("", "is empty"), ("- a\n- b\n", "not a list"), ("a: 1\n---\nb: 2\n", "invalid YAML")])
def test_yaml_documents_that_are_not_one_mapping(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(ConfigFileError, match=problem):
        load_config(write(tmp_path, "c.yaml", text))


# -- files -----------------------------------------------------------------------------------------------


def test_unknown_extension_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"c\.ini: unknown configuration file type '\.ini'"):
        load_config(write(tmp_path, "c.ini", "a=1"))
    with pytest.raises(ConfigFileError, match="no such file"):
        load_config(tmp_path / "absent.properties")


# -- CLI-level rules -------------------------------------------------------------------------------------


@pytest.mark.parametrize("extra, prop", [
    ("plugin.name=decoderbufs", "plugin.name"),
    ("connector.class=io.debezium.connector.mysql.MySqlConnector", "connector.class"),
    ("snapshot.locking.mode=custom", "snapshot.locking.mode"),
    ("converters=isbn", "converters"),
    ("topic.naming.strategy=com.example.MyStrategy", "topic.naming.strategy"),
    ("table.include.list=public.a\ntable.exclude.list=public.b", "table.exclude.list"),
])
def test_settings_sparkcdc_cannot_honour_name_the_property(tmp_path: Path, extra: str, prop: str) -> None:
    with pytest.raises(ConfigFileError) as info:
        load_config(write(tmp_path, "c.properties", properties_text(extra + "\n")))
    assert info.value.property == prop and info.value.line is not None


def test_pgoutput_in_any_case_is_accepted(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "c.properties", properties_text("plugin.name=PGOUTPUT\n"))).config.get("plugin.name") == "pgoutput"
