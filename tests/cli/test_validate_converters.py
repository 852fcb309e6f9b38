"""``sparkcdc validate`` on converter settings, without a server: a converter that needs a schema
registry is refused naming the file, the line and the property; CloudEvents validates."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparkcdc.cli.app import EXIT_CONFIG, app

RUNNER = CliRunner()
WIDE = {"COLUMNS": "200"}
VALID = (
    "name=inventory\n"
    "database.hostname=203.0.113.1\n"  # TEST-NET-3: never contacted without --connect
    "database.user=cdc\n"
    "database.dbname=app\n"
    "topic.prefix=srv\n"
)


def _validate(tmp_path: Path, extra: str, *options: str) -> tuple[int, str, Path]:
    path = tmp_path / "c.properties"
    path.write_text(VALID + extra)
    result = RUNNER.invoke(app, ["validate", *options, str(path)], env=WIDE)
    return result.exit_code, " ".join(result.output.split()), path


@pytest.mark.parametrize("extra, line, prop, words", [
    ("key.converter=io.confluent.connect.avro.AvroConverter\nkey.converter.schema.registry.url=http://registry:8081\n", 6,
     "key.converter", "io.confluent.connect.avro.AvroConverter writes Avro through a schema registry"),
    ("value.converter=io.confluent.connect.protobuf.ProtobufConverter\n", 6,
     "value.converter", "io.confluent.connect.protobuf.ProtobufConverter writes Protobuf through a schema registry"),
    ("value.converter=io.debezium.converters.CloudEventsConverter\nvalue.converter.data.serializer.type=avro\n", 7,
     "value.converter.data.serializer.type", "avro needs a schema registry"),
    ("value.converter=org.apache.kafka.connect.storage.StringConverter\n", 6,
     "value.converter", "StringConverter is not a converter sparkcdc runs"),
])
def test_a_converter_sparkcdc_cannot_run_exits_2_naming_file_line_and_property(tmp_path: Path, extra: str, line: int, prop: str,
                                                                               words: str) -> None:
    code, output, path = _validate(tmp_path, extra)
    assert code == EXIT_CONFIG, output
    assert f"{path}:{line}: {prop}: " in output and words in output


def test_cloudevents_validates_and_a_setting_without_effect_is_warned(tmp_path: Path) -> None:
    code, output, _ = _validate(tmp_path, "value.converter=io.debezium.converters.CloudEventsConverter\n"
                                          "value.converter.json.schemas.enable=false\n"
                                          "value.converter.schemas.enable=false\n", "--strict")
    assert code == 0, output
    assert "value.converter.schemas.enable (line 8): has no effect with io.debezium.converters.CloudEventsConverter" in output
