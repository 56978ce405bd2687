"""Read documents into text blocks that remember their page and heading path.

Supported: .txt, .md, .pdf (pypdf), .docx (its XML, no extra dependency), .html/.htm (stdlib parser).
Text encodings are detected (BOMs, strict UTF-8, then charset-normalizer), never guessed; a file
mixing UTF-8 lines with lines in a legacy encoding is decoded line by line. Every failure raises
:class:`DocumentError` with a message that says what is wrong with *that* file.

These parsers run in this process; knowledge bases read files through
:mod:`localqwen.retrieval.isolated_reader`, which runs them in a worker with time and memory limits.
"""

from __future__ import annotations

import re
import stat
import zipfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

SUPPORTED_SUFFIXES = {".txt", ".md", ".markdown", ".pdf", ".docx", ".html", ".htm"}
DEFAULT_MAX_BYTES = 100 * 1024 * 1024
# What the text part of a .docx may unpack to; real books are a few MB of XML, a zip bomb is GBs.
DEFAULT_MAX_EXPANDED_BYTES = 64 * 1024 * 1024


class DocumentError(ValueError):
    """This one file can't be read; the message says why."""


@dataclass
class Block:
    text: str
    page: int | None = None  # 1-based, PDFs only
    headings: tuple[str, ...] = ()


@dataclass
class Document:
    path: Path
    blocks: list[Block]
    encoding: str | None = None
    warnings: list[str] = field(default_factory=list)


def load_document(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES,
                  max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES) -> Document:
    """Read one file (size and type checked first) into blocks."""
    path = Path(path)
    check_regular_file(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise DocumentError(f"{path.name}: unsupported file type '{suffix or '(none)'}' "
                            f"(supported: {', '.join(sorted(SUPPORTED_SUFFIXES))})")
    size = path.stat().st_size
    if size == 0:
        raise DocumentError(f"{path.name}: the file is empty (0 bytes)")
    if size > max_bytes:
        raise DocumentError(f"{path.name}: {size / 2**20:.0f} MB is over the {max_bytes / 2**20:.0f} MB limit "
                            "for one document")
    if suffix == ".pdf":
        document = _load_pdf(path)
    elif suffix == ".docx":
        document = _load_docx(path, max_expanded_bytes)
    else:
        text, encoding, warnings = decode_text(path.read_bytes(), path.name)
        if suffix in (".html", ".htm"):
            blocks = _html_blocks(text)
        elif suffix in (".md", ".markdown"):
            blocks = markdown_blocks(text)
        else:
            blocks = [Block(text)]
        document = Document(path, blocks, encoding, warnings)
    document.blocks = [b for b in document.blocks if b.text.strip()]
    if not document.blocks:
        raise DocumentError(f"{path.name}: no text found in the file")
    return document


def check_regular_file(path: Path) -> None:
    """:class:`DocumentError` unless ``path`` is a regular file (opening a named pipe or a device
    would wait forever or read without end)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise DocumentError(f"{path.name}: no such file") from None
    except OSError as exc:
        raise DocumentError(f"{path.name}: can't be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "a special file")
        raise DocumentError(f"{path.name}: not a regular file but {kind}; skipped")


# ---------------------------------------------------------------- text and encodings

_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def decode_text(data: bytes, name: str = "file") -> tuple[str, str, list[str]]:
    """Return (text, encoding name, warnings) or raise DocumentError for binary / undecodable data."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding), encoding, []
    try:
        return data.decode("utf-8"), "utf-8", []
    except UnicodeDecodeError:
        pass
    if b"\x00" in data[:8192] and not _looks_like_bomless_utf16(data):
        raise DocumentError(f"{name}: looks like a binary file, not text")
    from charset_normalizer import from_bytes

    # A legacy encoding decodes almost any bytes, so first check whether some lines are really UTF-8
    # (a file pasted together from several sources): then decode line by line.
    lines = data.split(b"\n")
    utf8_lines = sum(1 for line in lines if not line.isascii() and _is_utf8(line))
    if utf8_lines:
        legacy = b"\n".join(line for line in lines if not _is_utf8(line))
        legacy_best = from_bytes(legacy).best()
        if legacy_best is not None:
            legacy_encoding = _prefer_common_chinese(legacy, legacy_best.encoding)
            text = "\n".join(line.decode("utf-8") if _is_utf8(line) else line.decode(legacy_encoding, "replace")
                             for line in lines)
            return text, f"mixed (utf-8 + {legacy_encoding})", [
                f"{name}: mixed encodings; {utf8_lines} line(s) read as UTF-8, the rest as {legacy_encoding}"]
    best = from_bytes(data).best()
    if best is None:
        raise DocumentError(f"{name}: can't detect the text encoding (binary or corrupted data?)")
    encoding = _prefer_common_chinese(data, best.encoding)
    if encoding != best.encoding:
        return data.decode(encoding, "replace"), encoding, []
    return str(best), best.encoding, []


_CHINESE = {"big5", "big5hkscs", "cp950", "gb2312", "gbk", "gb18030", "hz"}
# The first level of each standard holds its most frequent characters: GB2312 rows 0xB0-0xD7
# (3,755 hanzi), Big5 0xA440-0xC67E (5,401 hanzi). Real text is almost all level one in its own
# encoding and mostly rare characters when read in the other one.
_COMMON_RANGE = {"gb18030": ("gb2312", 0xB0, 0xD7), "big5": ("big5", 0xA4, 0xC6)}


def _prefer_common_chinese(data: bytes, guess: str) -> str:
    """GBK or Big5 for Chinese bytes, by which reading gives common characters.

    A few lines are too little for charset-normalizer: a GBK ``中文行`` is read as Big5 ``笢恅俴``
    (valid but rare characters). Other guesses are returned unchanged.
    """
    if guess.lower().replace("-", "").replace("_", "") not in _CHINESE:
        return guess
    scores = {}
    for encoding, (table, low, high) in _COMMON_RANGE.items():
        text = data.decode(encoding, "replace")
        wide = [c for c in text if ord(c) > 0x7F]
        common = 0
        for char in wide:
            try:
                lead = char.encode(table)[0]
            except UnicodeEncodeError:
                continue
            common += low <= lead <= high
        scores[encoding] = common / len(wide) if wide else 0.0
    best = max(scores, key=lambda e: scores[e])
    guess_family = "big5" if guess.lower().startswith(("big5", "cp950")) else "gb18030"
    return guess if scores[best] <= scores[guess_family] else best


def _is_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _looks_like_bomless_utf16(data: bytes) -> bool:
    sample = data[:4096]
    zeros_odd = sample[1::2].count(0)
    zeros_even = sample[0::2].count(0)
    half = max(1, len(sample) // 2)
    return zeros_odd / half > 0.3 or zeros_even / half > 0.3


_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def markdown_blocks(text: str) -> list[Block]:
    """One block per section; each carries the path of headings above it."""
    blocks: list[Block] = []
    path: list[tuple[int, str]] = []
    lines: list[str] = []
    in_code = False

    def flush() -> None:
        if lines:
            blocks.append(Block("\n".join(lines).strip(), headings=tuple(t for _, t in path)))
            lines.clear()

    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        match = None if in_code else _MD_HEADING.match(line)
        if match:
            flush()
            level = len(match.group(1))
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, match.group(2))]
        else:
            lines.append(line)
    flush()
    return blocks


# ---------------------------------------------------------------- PDF

def _load_pdf(path: Path) -> Document:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError, PyPdfError

    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted:
            # Many PDFs are "encrypted" with an empty user password only to set permissions.
            try:
                ok = reader.decrypt("")
            except Exception as exc:  # pypdf raises several types for unsupported crypto
                raise DocumentError(f"{path.name}: the PDF is encrypted ({exc})") from exc
            if not ok:
                raise DocumentError(f"{path.name}: the PDF is password-protected; remove the password first")
        pages = list(reader.pages)
        blocks = [Block(page.extract_text() or "", page=index + 1) for index, page in enumerate(pages)]
    except DocumentError:
        raise
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, OSError, AssertionError,
            RecursionError) as exc:  # PyPdfError: LimitReachedError when a stream inflates past pypdf's limits
        raise DocumentError(f"{path.name}: malformed PDF ({type(exc).__name__}: {str(exc)[:300]})") from exc
    if not any(b.text.strip() for b in blocks):
        raise DocumentError(f"{path.name}: the PDF has no extractable text "
                            f"({len(blocks)} page(s); scanned images need OCR first)")
    return Document(path, blocks)


# ---------------------------------------------------------------- DOCX

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _load_docx(path: Path, max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES) -> Document:
    try:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo("word/document.xml")
            # The declared size is checked first, and the read is bounded too (a lying header then
            # fails the archive's own length/CRC check instead of inflating without end).
            if info.file_size > max_expanded_bytes:
                raise DocumentError(f"{path.name}: its text part unpacks to {info.file_size / 2**20:.0f} MB, over the "
                                    f"{max_expanded_bytes / 2**20:.0f} MB limit (a zip bomb?)")
            with archive.open(info) as member:
                xml = member.read(max_expanded_bytes + 1)
            if len(xml) > max_expanded_bytes:
                raise DocumentError(f"{path.name}: its text part unpacks to more than "
                                    f"{max_expanded_bytes / 2**20:.0f} MB (a zip bomb?)")
        root = ElementTree.fromstring(xml)
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, EOFError, OverflowError,
            NotImplementedError) as exc:
        raise DocumentError(f"{path.name}: not a valid .docx file ({exc})") from exc
    blocks: list[Block] = []
    path_stack: list[tuple[int, str]] = []
    lines: list[str] = []
    for paragraph in root.iter(f"{_W}p"):
        text = "".join(node.text or "" for node in paragraph.iter(f"{_W}t"))
        style = paragraph.find(f"{_W}pPr/{_W}pStyle")
        style_name = style.get(f"{_W}val", "") if style is not None else ""
        level = _heading_level(style_name)
        if level and text.strip():
            if lines:
                blocks.append(Block("\n".join(lines), headings=tuple(t for _, t in path_stack)))
                lines = []
            path_stack = [(lvl, t) for lvl, t in path_stack if lvl < level] + [(level, text.strip())]
        elif text.strip():
            lines.append(text)
    if lines:
        blocks.append(Block("\n".join(lines), headings=tuple(t for _, t in path_stack)))
    return Document(path, blocks)


def _heading_level(style: str) -> int:
    match = re.match(r"(?i)heading\s*(\d)", style) or re.match(r"(?i)^title$", style)
    if not match:
        return 0
    return int(match.group(1)) if match.groups() else 1


# ---------------------------------------------------------------- HTML

class _HTMLText(HTMLParser):
    SKIP = {"script", "style", "noscript", "template", "head"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self.path: list[tuple[int, str]] = []
        self.parts: list[str] = []
        self.heading_level = 0
        self.heading_text: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag, attrs) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self.flush()
            self.heading_level = int(tag[1])
            self.heading_text = []
        elif tag in {"p", "br", "li", "div", "tr"}:
            self.parts.append("\n")

    def handle_endtag(self, tag) -> None:
        if tag in self.SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif re.fullmatch(r"h[1-6]", tag) and self.heading_level:
            title = " ".join("".join(self.heading_text).split())
            level = self.heading_level
            self.path = [(lvl, t) for lvl, t in self.path if lvl < level] + [(level, title)]
            self.heading_level = 0

    def handle_data(self, data) -> None:
        if self.skipping:
            return
        (self.heading_text if self.heading_level else self.parts).append(data)

    def flush(self) -> None:
        text = re.sub(r"\n\s*\n+", "\n\n", "".join(self.parts)).strip()
        if text:
            self.blocks.append(Block(text, headings=tuple(t for _, t in self.path)))
        self.parts = []


def _html_blocks(text: str) -> list[Block]:
    parser = _HTMLText()
    parser.feed(text)
    parser.close()
    parser.flush()
    return parser.blocks
