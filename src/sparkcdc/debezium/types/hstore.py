"""The ``hstore`` extension type, in both ``hstore.handling.mode`` settings.

Debezium parses hstore text with pgjdbc's ``HStoreConverter.fromString``, which fills a
``java.util.HashMap``. Both modes expose that map's iteration order: ``json`` (the default) writes
it with Jackson into the text of an ``io.debezium.data.Json`` string, compactly
(``{"key5":null,"key4":"val4"}``); ``map`` hands the map to JsonConverter as a Connect
``map<string, optional string>``, whose entries come out in the same order. So the order here is
reproduced exactly: :func:`java_hashmap_order` replays HashMap's bucket layout (String.hashCode,
the hash spread, resizes, and red-black tree bins), and :func:`jackson_string` writes strings the
way Jackson escapes them.

Checked against Debezium 3.6.3: key order (including a resize past 12 keys and colliding keys),
``NULL`` values, ``""``, escaped quotes and backslashes, control characters
(``\\u0001``/``\\u001F`` in upper-case hex, ``\\t \\n \\r \\b \\f``), and non-ASCII (written as is).
"""

from __future__ import annotations

import re
import sys
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from ..connect import map_, string
from .base import ColumnType, ConversionError, MappingOptions, ValueMapping
from .text import JSON_NAME

__all__ = [
    "jackson_object",
    "jackson_string",
    "java_hashmap_order",
    "java_sized_hashmap_order",
    "java_string_hash",
    "map_hstore_type",
    "parse_hstore",
]

# -- parsing hstore_out ------------------------------------------------------------------------------

# One pair as hstore_out writes it: "key"=>"value" or "key"=>NULL, pairs separated by ", ".
# Whitespace around => and , is tolerated (hstore's input syntax); hstore_out never writes it.
_PAIR = re.compile(r'\s*"((?:[^"\\]|\\.)*)"\s*=>\s*(?:"((?:[^"\\]|\\.)*)"|(NULL))\s*(?:,|\Z)', re.DOTALL)
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)


def _unescape(text: str) -> str:
    return _ESCAPED.sub(r"\1", text) if "\\" in text else text


def parse_hstore(text: str) -> list[tuple[str, str | None]]:
    """hstore text output -> (key, value) pairs in PostgreSQL's order (``None`` for ``NULL``)."""
    pairs: list[tuple[str, str | None]] = []
    position, end = 0, len(text)
    match = _PAIR.match
    while position < end:
        found = match(text, position)
        if found is None or found.end() == position:
            if text[position:].strip() == "":
                break
            raise ConversionError(f"{text[:80]!r} is not hstore text (unexpected {text[position:position + 20]!r})")
        key, value, null = found.groups()
        pairs.append((_unescape(key), None if null else _unescape(value)))
        position = found.end()
    return pairs


# -- java.util.HashMap iteration order ---------------------------------------------------------------

_MASK32 = 0xFFFFFFFF
_UTF16 = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"
_TREEIFY_THRESHOLD = 8
_UNTREEIFY_THRESHOLD = 6
_MIN_TREEIFY_CAPACITY = 64


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` as an unsigned 32-bit number (over UTF-16 code units, wrapping)."""
    units: Any = text.encode("ascii") if text.isascii() else array("H", text.encode(_UTF16))
    h = 0
    for unit in units:
        h = (31 * h + unit) & _MASK32
    return h


def _signed(value: int) -> int:
    return value - 0x100000000 if value & 0x80000000 else value


class _Tree:
    """A HashMap bin turned into a red-black tree (``TreeNode``s), tracked by entry number.

    Only its iteration order matters here: the ``next`` links (``order``), which keep insertion
    order except that the tree's root is moved to the front after every change, and a new node is
    linked right after its tree parent (``putTreeVal``).
    """

    __slots__ = ("_map", "left", "order", "parent", "red", "right", "root")

    def __init__(self, hashmap: _HashMap, order: list[int]) -> None:
        self._map = hashmap
        self.order = order
        self.left: dict[int, int] = {}
        self.right: dict[int, int] = {}
        self.parent: dict[int, int] = {}
        self.red: dict[int, bool] = {}
        self.root = -1
        for entry in order:  # treeify(): insert in list order, then move the root to the front
            self._insert(entry)
        self._move_root_to_front()

    def _direction(self, entry: int, other: int) -> int:
        """HashMap's tree order: signed hash first, then ``String.compareTo`` (UTF-16 units)."""
        h, ph = self._map.signed_hashes[entry], self._map.signed_hashes[other]
        if ph > h:
            return -1
        if ph < h:
            return 1
        units, other_units = self._map.units(entry), self._map.units(other)
        return -1 if units < other_units else 1  # keys are distinct, so never equal

    def _insert(self, entry: int) -> int:
        """Links ``entry`` into the tree (left when the direction is <= 0); returns its parent."""
        self.left.pop(entry, None)
        self.right.pop(entry, None)
        if self.root < 0:
            self.parent[entry] = -1
            self.red[entry] = False
            self.root = entry
            return -1
        node = self.root
        while True:
            go_left = self._direction(entry, node) <= 0
            child = (self.left if go_left else self.right).get(node, -1)
            if child < 0:
                (self.left if go_left else self.right)[node] = entry
                self.parent[entry] = node
                self._balance_insertion(entry)
                return node
            node = child

    def put(self, entry: int) -> None:
        """``putTreeVal`` for a new key."""
        parent = self._insert(entry)
        self.order.insert(self.order.index(parent) + 1, entry)
        self._move_root_to_front()

    def _move_root_to_front(self) -> None:
        if self.order[0] != self.root:
            self.order.remove(self.root)
            self.order.insert(0, self.root)

    def _rotate_left(self, p: int) -> None:
        r = self.right.get(p, -1)
        if p < 0 or r < 0:
            return
        rl = self.left.get(r, -1)
        self._set_child(self.right, p, rl)
        pp = self.parent[p]
        self.parent[r] = pp
        if pp < 0:
            self.root = r
            self.red[r] = False
        elif self.left.get(pp, -1) == p:
            self.left[pp] = r
        else:
            self.right[pp] = r
        self.left[r] = p
        self.parent[p] = r

    def _rotate_right(self, p: int) -> None:
        lc = self.left.get(p, -1)
        if p < 0 or lc < 0:
            return
        lr = self.right.get(lc, -1)
        self._set_child(self.left, p, lr)
        pp = self.parent[p]
        self.parent[lc] = pp
        if pp < 0:
            self.root = lc
            self.red[lc] = False
        elif self.right.get(pp, -1) == p:
            self.right[pp] = lc
        else:
            self.left[pp] = lc
        self.right[lc] = p
        self.parent[p] = lc

    def _set_child(self, side: dict[int, int], node: int, child: int) -> None:
        if child < 0:
            side.pop(node, None)
        else:
            side[node] = child
            self.parent[child] = node

    def _balance_insertion(self, x: int) -> None:
        """``TreeNode.balanceInsertion`` (CLR red-black insertion fix-up), step for step."""
        red, parent, left, right = self.red, self.parent, self.left, self.right
        red[x] = True
        while True:
            xp = parent[x]
            if xp < 0:
                red[x] = False
                self.root = x
                return
            xpp = parent[xp]
            if not red[xp] or xpp < 0:
                return
            xppl = left.get(xpp, -1)
            if xp == xppl:
                xppr = right.get(xpp, -1)
                if xppr >= 0 and red[xppr]:
                    red[xppr] = red[xp] = False
                    red[xpp] = True
                    x = xpp
                    continue
                if x == right.get(xp, -1):
                    x = xp
                    self._rotate_left(x)
                    xp = parent[x]
                    xpp = parent[xp] if xp >= 0 else -1
                if xp >= 0:
                    red[xp] = False
                    if xpp >= 0:
                        red[xpp] = True
                        self._rotate_right(xpp)
            else:
                if xppl >= 0 and red[xppl]:
                    red[xppl] = red[xp] = False
                    red[xpp] = True
                    x = xpp
                    continue
                if x == left.get(xp, -1):
                    x = xp
                    self._rotate_right(x)
                    xp = parent[x]
                    xpp = parent[xp] if xp >= 0 else -1
                if xp >= 0:
                    red[xp] = False
                    if xpp >= 0:
                        red[xpp] = True
                        self._rotate_left(xpp)


class _HashMap:
    """Replays ``new HashMap<>(capacity)`` + ``put`` of distinct keys, keeping only the layout.

    Keys are Strings unless ``hashes`` gives their ``hashCode()`` values (unsigned 32-bit); then the
    tree order needs no tie-break, which holds for keys whose hash codes differ (``Short``, ``Integer``).
    """

    def __init__(self, keys: Sequence[Any], hashes: Sequence[int] | None = None, capacity: int = 16) -> None:
        self.keys = keys
        codes = hashes if hashes is not None else [java_string_hash(key) for key in keys]
        self.hashes = [_spread(h) for h in codes]
        self.signed_hashes = [_signed(h) for h in self.hashes]
        self._units: dict[int, bytes] = {}
        self.capacity = capacity
        self.threshold = _threshold(capacity)
        self.table: list[list[int] | _Tree | None] = [None] * self.capacity
        for entry in range(len(keys)):
            self._put(entry)
            if entry + 1 > self.threshold:
                self._resize()

    def units(self, entry: int) -> bytes:
        """The key as big-endian UTF-16 bytes: bytewise order is ``String.compareTo`` order."""
        found = self._units.get(entry)
        if found is None:
            found = self._units[entry] = self.keys[entry].encode("utf-16-be")
        return found

    def order(self) -> list[int]:
        result: list[int] = []
        for bin_ in self.table:
            if bin_ is not None:
                result.extend(bin_.order if isinstance(bin_, _Tree) else bin_)
        return result

    def _put(self, entry: int) -> None:
        index = self.hashes[entry] & (self.capacity - 1)
        bin_ = self.table[index]
        if bin_ is None:
            self.table[index] = [entry]
        elif isinstance(bin_, _Tree):
            bin_.put(entry)
        else:
            bin_.append(entry)
            if len(bin_) > _TREEIFY_THRESHOLD:  # putVal: binCount >= TREEIFY_THRESHOLD - 1
                self._treeify_bin(index)

    def _treeify_bin(self, index: int) -> None:
        if self.capacity < _MIN_TREEIFY_CAPACITY:
            self._resize()
            return
        bin_ = self.table[index]
        assert isinstance(bin_, list)
        self.table[index] = _Tree(self, bin_)

    def _resize(self) -> None:
        old_capacity = self.capacity
        self.capacity *= 2
        self.threshold = _threshold(self.capacity)
        table: list[list[int] | _Tree | None] = [None] * self.capacity
        for index, bin_ in enumerate(self.table):
            if bin_ is None:
                continue
            entries = bin_.order if isinstance(bin_, _Tree) else bin_
            low = [e for e in entries if not self.hashes[e] & old_capacity]
            high = [e for e in entries if self.hashes[e] & old_capacity]
            if isinstance(bin_, _Tree):
                table[index] = self._split_half(bin_, low, bool(high))
                table[index + old_capacity] = self._split_half(bin_, high, bool(low))
            else:
                table[index] = low or None
                table[index + old_capacity] = high or None
        self.table = table

    def _split_half(self, tree: _Tree, entries: list[int], other_half_used: bool) -> list[int] | _Tree | None:
        """``TreeNode.split`` for one half: a list when small, else a tree (rebuilt if it changed)."""
        if not entries:
            return None
        if len(entries) <= _UNTREEIFY_THRESHOLD:
            return entries
        if not other_half_used:
            return tree  # every node stayed: the same tree, the same order
        return _Tree(self, entries)


def _spread(h: int) -> int:
    return h ^ (h >> 16)


def _threshold(capacity: int) -> int:
    """``(int) (capacity * loadFactor)`` with the default load factor 0.75."""
    return capacity * 3 // 4


def _table_size_for(expected: int) -> int:
    """``HashMap.tableSizeFor``: the first table of ``new HashMap<>(expected)`` (a power of two)."""
    return 1 if expected <= 1 else 1 << (expected - 1).bit_length()


def java_hashmap_order(keys: Sequence[str]) -> list[int]:
    """Positions of distinct ``keys`` (put in this order) in ``HashMap`` iteration order."""
    count = len(keys)
    if count <= 1:
        return list(range(count))
    if count <= _TREEIFY_THRESHOLD:
        # Fast path: at most 8 keys never resize the 16-slot table nor fill a bin to 9, so the order
        # is by slot, then by insertion (sorted() is stable).
        slots = [_spread(java_string_hash(key)) & 15 for key in keys]
        return sorted(range(count), key=slots.__getitem__)
    return _HashMap(keys).order()


def java_sized_hashmap_order(hash_codes: Sequence[int], expected: int) -> list[int]:
    """Positions of distinct keys with these (all different) ``hashCode()`` values in the iteration
    order of ``new HashMap<>(expected)`` after putting them in this order (e.g. ``Short`` keys,
    whose hash code is their value)."""
    count = len(hash_codes)
    if count <= 1:
        return list(range(count))
    first = _table_size_for(expected)
    spread = [_spread(h & _MASK32) for h in hash_codes]
    classes: dict[int, int] = {}
    for h in spread:
        slot = h & (first - 1)
        classes[slot] = classes.get(slot, 0) + 1
    if max(classes.values()) <= _TREEIFY_THRESHOLD:
        # No bin ever holds more than 8 entries (later tables only split the first one's bins), so
        # none turns into a tree and only the load factor resizes: the order is by final slot, then
        # by insertion (sorted() is stable).
        capacity = first
        while count > _threshold(capacity):
            capacity *= 2
        return sorted(range(count), key=lambda i: spread[i] & (capacity - 1))
    return _HashMap(range(count), hashes=[h & _MASK32 for h in hash_codes], capacity=first).order()


def _hashmap_ordered(pairs: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    """The pairs as a HashMap filled by ``put`` in this order iterates them (a later duplicate wins)."""
    if len(pairs) > 1 and len({key for key, _ in pairs}) != len(pairs):
        pairs = list(dict(pairs).items())  # put() replaces the value and keeps the first slot
    if len(pairs) <= 1:
        return pairs
    return [pairs[i] for i in java_hashmap_order([key for key, _ in pairs])]


# -- Jackson's JSON text -----------------------------------------------------------------------------

_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')
_ESCAPES = {code: f"\\u{code:04X}" for code in range(0x20)}
_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"})


def jackson_string(text: str) -> str:
    """A JSON string literal as Jackson's generator writes it (non-ASCII and ``/`` unescaped)."""
    if _NEEDS_ESCAPE.search(text) is None:
        return f'"{text}"'
    return f'"{text.translate(_ESCAPES)}"'


def jackson_object(pairs: Sequence[tuple[str, str | None]]) -> str:
    """``{"k":"v","k2":null}``: compact, in the given order."""
    return "{" + ",".join(f"{jackson_string(k)}:{'null' if v is None else jackson_string(v)}" for k, v in pairs) + "}"


# -- mappings ----------------------------------------------------------------------------------------


def _to_json(text: str) -> str:
    return jackson_object(_hashmap_ordered(parse_hstore(text)))


def _to_map(text: str) -> dict[str, str | None]:
    return dict(_hashmap_ordered(parse_hstore(text)))


def _placeholder_text(options: MappingOptions) -> str:
    """Debezium's placeholder string: ``new String(placeholderBytes)`` (``hex:`` already decoded)."""
    return options.placeholder_bytes.decode("utf-8", errors="replace")


def map_hstore_type(column: ColumnType, options: MappingOptions) -> ValueMapping | None:
    if column.name != "hstore":
        return None
    placeholder = _placeholder_text(options)
    if options.hstore_handling_mode == "map":
        schema = map_(string(), string(optional=True))
        convert: Callable[[str], Any] = _to_map
        return ValueMapping(schema, convert, zero={}, toast={placeholder: placeholder})
    return ValueMapping(
        string(name=JSON_NAME, version=1), _to_json, zero="{}", toast=jackson_object([(placeholder, placeholder)])
    )
