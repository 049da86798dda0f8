#!/usr/bin/env python3
"""Turns documentation sources into plain English prose, one paragraph per line.

Contract: `clean_text.py --format rst|pod|html|plain --out OUT.txt FILE...` reads every FILE (sorted
order is the caller's job), drops markup, code and tables, and writes paragraphs of at least
MIN_WORDS words to OUT.txt, one per line, UTF-8, in input order, with a blank line after each
input file's paragraphs: each source file is one document to `ppu-data text`, which shuffles
documents and splits train/validation between them. Deterministic; stdlib only.
Prints "<format>: N files, P paragraphs, B bytes" on stdout. Errors name the file or flag.
"""

import argparse
import html.parser
import re
import sys

MIN_WORDS = 8

RST_ROLE = re.compile(r":[a-zA-Z:+-]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
RST_LINK = re.compile(r"`([^`<]+?)\s*<[^>]*>`_+")
RST_LITERAL = re.compile(r"``([^`]*)``")
RST_REF = re.compile(r"`([^`]*)`_*")
RST_UNDERLINE = re.compile(r"^\s*([=\-~^\"'`#*+.:_])\1{2,}\s*$")
POD_CODE = re.compile(r"[A-Z]<<+\s+(.*?)\s+>>+|[A-Z]<([^<>]*)>")


def paragraphs_of(lines):
    """Splits lines into blank-line separated paragraphs (lists of raw lines)."""
    para = []
    for line in lines:
        if line.strip():
            para.append(line.rstrip("\n"))
        elif para:
            yield para
            para = []
    if para:
        yield para


def prose(text):
    text = re.sub(r"\s+", " ", text).strip()
    sentence = re.search(r"[a-z]{3}", text) and re.search(r"[a-z)][.!?:]( |$)", text)
    return text if len(text.split()) >= MIN_WORDS and sentence else ""


def clean_rst(lines):
    out = []
    literal_next = False
    for para in paragraphs_of(lines):
        first = para[0]
        indented = first[:1] in (" ", "\t")
        if literal_next and indented:
            continue  # literal (code) block after "::"
        literal_next = False
        if (
            first.lstrip().startswith(("..", ">>>", "|", "+-", "====="))
            or indented
            and first.lstrip().startswith(("..", ">>>"))
        ):
            continue  # directives, comments, doctests, tables
        body = [l for l in para if not RST_UNDERLINE.match(l)]
        if not body:
            continue
        text = " ".join(l.strip() for l in body)
        if text.endswith("::"):
            literal_next = True
            text = text[:-1]
        if indented and re.match(r"^[\w.()\[\], *=-]+$", first.strip()) and len(body) == 1:
            continue  # signature-like lines
        text = RST_ROLE.sub(r"\1", text)
        text = RST_LINK.sub(r"\1", text)
        text = RST_LITERAL.sub(r"\1", text)
        text = RST_REF.sub(r"\1", text)
        text = text.lstrip("*-# ").replace("**", "").replace("\\", "")
        text = prose(text)
        if text:
            out.append(text)
    return out


def strip_pod_codes(text):
    text = re.sub(r"[XZ]<[^<>]*>", "", text)  # index entries and null codes carry no prose
    for _ in range(4):  # nested codes: I<C<...>>
        new = POD_CODE.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)
        if new == text:
            break
        text = new
    text = re.sub(r"\|[^\s]*", "", text)  # L<text|target> leaves "text|target"
    return text


def clean_pod(lines):
    out = []
    in_pod = False  # .pm files start with code; every POD block opens with a command
    for para in paragraphs_of(lines):
        first = para[0]
        if first.startswith("=cut"):
            in_pod = False
            continue
        if first.startswith("="):
            in_pod = True
            if first.startswith(("=begin", "=for")):
                continue
            continue  # headings and list commands carry no full sentences
        if not in_pod or first[:1] in (" ", "\t"):
            continue  # code, or verbatim paragraphs (code examples)
        text = prose(strip_pod_codes(" ".join(l.strip() for l in para)))
        if text:
            out.append(text)
    return out


class _Paragraphs(html.parser.HTMLParser):
    """Collects the text of every <p> element; code, tables and navigation are never prose."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.current = []
        self.found = []

    def handle_starttag(self, tag, attrs):
        if tag == "p":
            self.depth += 1
            self.current = []

    def handle_endtag(self, tag):
        if tag == "p" and self.depth:
            self.depth -= 1
            self.found.append("".join(self.current))

    def handle_data(self, data):
        if self.depth:
            self.current.append(data)


def clean_html(lines):
    parser = _Paragraphs()
    parser.feed("".join(lines))
    return [t for t in (prose(p) for p in parser.found) if t]


def clean_plain(lines):
    return [t for t in (prose(" ".join(p)) for p in paragraphs_of(lines)) if t]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", required=True, choices=["rst", "pod", "html", "plain"])
    ap.add_argument("--out", required=True)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    cleaner = {"rst": clean_rst, "pod": clean_pod, "html": clean_html, "plain": clean_plain}[args.format]
    paras, docs = 0, []
    for path in args.files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                doc = cleaner(f.readlines())
        except OSError as e:
            sys.exit(f"clean_text.py: cannot read input file {path}: {e.strerror}")
        if doc:
            docs.append("".join(p + "\n" for p in doc))
            paras += len(doc)
    data = "\n".join(docs)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(data)
    print(
        f"{args.format}: {len(args.files)} files, {len(docs)} documents, {paras} paragraphs, {len(data.encode())} bytes"
    )


if __name__ == "__main__":
    main()
