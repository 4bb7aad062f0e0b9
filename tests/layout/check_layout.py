"""The size limits of src/ that keep one concept in one place (tests/README.md):

- no source file over 700 lines,
- no function over 150 lines (as lizard counts them, from its first line to its last),
- no folder with more than 22 source files at its top level (subfolders hold the rest).

Usage: check_layout.py SRC_DIR. Prints every breach and exits 1 when there is one."""

import os
import sys

import lizard

MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 150
MAX_FILES_PER_FOLDER = 22
SOURCE_SUFFIXES = (".h", ".cc", ".cu", ".cuh", ".cpp", ".hpp")


def main(src):
    breaches = []
    functions = 0
    files = 0
    for folder, _, names in sorted(os.walk(src)):
        sources = sorted(n for n in names if n.endswith(SOURCE_SUFFIXES))
        rel_folder = os.path.relpath(folder, os.path.dirname(src))
        if len(sources) > MAX_FILES_PER_FOLDER:
            breaches.append(f"{rel_folder}/: {len(sources)} source files at its top level (limit {MAX_FILES_PER_FOLDER})")
        for name in sources:
            path = os.path.join(folder, name)
            rel = os.path.join(rel_folder, name)
            files += 1
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            lines = text.count("\n")
            if lines > MAX_FILE_LINES:
                breaches.append(f"{rel}: {lines} lines (limit {MAX_FILE_LINES})")
            for fn in lizard.analyze_file.analyze_source_code(path, text).function_list:
                functions += 1
                if fn.length > MAX_FUNCTION_LINES:
                    breaches.append(f"{rel}:{fn.start_line}: function {fn.name} is {fn.length} lines (limit {MAX_FUNCTION_LINES})")
    for b in breaches:
        print(b)
    print(f"check_layout: {files} files, {functions} functions, {len(breaches)} over the limits")
    return 1 if breaches else 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: check_layout.py SRC_DIR")
    sys.exit(main(os.path.abspath(sys.argv[1])))
