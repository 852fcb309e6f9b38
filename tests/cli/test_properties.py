"""The .properties reader follows java.util.Properties.load, line by line of its specification."""

from __future__ import annotations

import pytest

from sparkcdc.cli.properties import PropertiesSyntaxError, parse_properties


def as_dict(text: str) -> dict[str, str]:
    return {entry.key: entry.value for entry in parse_properties(text)}


def test_separators_and_whitespace() -> None:
    text = "a=1\nb: 2\nc 3\n  d  =  4  \ne\t:\t5\nf\n g = = 6\nh:=7\n"
    assert as_dict(text) == {"a": "1", "b": "2", "c": "3", "d": "4  ", "e": "5", "f": "", "g": "= 6", "h": "=7"}


def test_comments_and_blank_lines() -> None:
    text = "# comment\n! also a comment\n   # indented comment\n\n   \nkey=value # not a comment\n"
    assert as_dict(text) == {"key": "value # not a comment"}


def test_a_comment_line_does_not_continue() -> None:
    assert as_dict("# comment \\\nkey=value\n") == {"key": "value"}


def test_continuation_lines_drop_leading_whitespace() -> None:
    text = "table.include.list=public\\\\.a,\\\n     public\\\\.b,\\\n\t\tpublic\\\\.c\nnext=1\n"
    assert as_dict(text) == {"table.include.list": "public\\.a,public\\.b,public\\.c", "next": "1"}


def test_continuation_line_starting_with_hash_is_not_a_comment() -> None:
    assert as_dict("key=a\\\n  #b\n") == {"key": "a#b"}


def test_even_number_of_backslashes_does_not_continue() -> None:
    assert as_dict("a=x\\\\\nb=y\n") == {"a": "x\\", "b": "y"}


def test_continuation_into_an_empty_line_ends_the_entry() -> None:
    assert as_dict("a=x\\\n\nb=y") == {"a": "x", "b": "y"}


def test_continuation_at_end_of_file() -> None:
    assert as_dict("a=x\\") == {"a": "x"}


def test_escapes_in_keys_and_values() -> None:
    text = "my\\=key=v\\=1\nother\\:key\\ with\\ blanks:\\u00e9t\\u00E9\\tx\\ny\\q\n"
    assert as_dict(text) == {"my=key": "v=1", "other:key with blanks": "été\tx\nyq"}


def test_surrogate_pair_escapes_make_one_character() -> None:
    assert as_dict("k=\\uD83D\\uDE00") == {"k": "\U0001F600"}


def test_line_endings_cr_lf_and_crlf() -> None:
    assert as_dict("a=1\r\nb=2\rc=3\n") == {"a": "1", "b": "2", "c": "3"}


def test_entries_keep_their_line_numbers_and_repeats() -> None:
    entries = parse_properties("# header\na=1\nb=x\\\n  y\n\na=2\n")
    assert [(e.key, e.value, e.line) for e in entries] == [("a", "1", 2), ("b", "xy", 3), ("a", "2", 6)]


def test_malformed_unicode_escape_names_the_line() -> None:
    with pytest.raises(PropertiesSyntaxError) as info:
        parse_properties("a=1\n\nb=bad\\u12G4\n")
    assert info.value.line == 3
    assert "\\u12G4" in str(info.value)


def test_truncated_unicode_escape_is_an_error() -> None:
    with pytest.raises(PropertiesSyntaxError, match="line 1"):
        parse_properties("a=\\u12")


def test_empty_key_is_an_error() -> None:
    with pytest.raises(PropertiesSyntaxError) as info:
        parse_properties("a=1\n=value\n")
    assert info.value.line == 2
