"""Packs a wheel from a meson build's extension and python/ringgrad's sources, compiling
nothing: the files `pip install .` would put in site-packages (python/meson.build's
install_sources and the extension), with the dist-info pip needs. tests/python_readme.sh
installs it in place of `pip install .`, so CI follows the README without building the library
a second time. Run it with the Python the extension was built for (its tag is that Python's).

    python wheel_from_build.py BUILD/python/_C.<abi>.so OUTDIR   (prints the wheel's path)
"""
import base64
import hashlib
import os
import sys
import sysconfig
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "ringgrad")
NAME, VERSION = "ringgrad", "0.1.0"  # pyproject.toml's


def package_files(extension):
    """(path in the wheel, path on disk) of every file the wheel holds besides its dist-info."""
    files = []
    for root, _dirs, names in os.walk(PACKAGE):
        if "__pycache__" in root:
            continue
        for name in sorted(names):
            if name.endswith((".py", ".pyi")) or name == "py.typed":
                disk = os.path.join(root, name)
                files.append((os.path.relpath(disk, HERE).replace(os.sep, "/"), disk))
    files.append((f"{NAME}/{os.path.basename(extension)}", extension))
    return files


def record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def main():
    if len(sys.argv) != 3 or not os.path.isfile(sys.argv[1]):
        sys.exit("usage: wheel_from_build.py EXTENSION OUTDIR")
    extension, outdir = sys.argv[1], sys.argv[2]
    python_tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tag = f"{python_tag}-{python_tag}-{platform}"
    dist_info = f"{NAME}-{VERSION}.dist-info"
    meta = {
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
                                 "Requires-Python: >=3.10\nRequires-Dist: numpy\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: python/wheel_from_build.py\n"
                              f"Root-Is-Purelib: false\nTag: {tag}\n",
    }
    path = os.path.join(outdir, f"{NAME}-{VERSION}-{tag}.whl")
    records = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for arcname, disk in package_files(extension):
            with open(disk, "rb") as f:
                data = f.read()
            wheel.writestr(arcname, data)
            records.append(record_line(arcname, data))
        for arcname, text in meta.items():
            wheel.writestr(arcname, text)
            records.append(record_line(arcname, text.encode()))
        records.append(f"{dist_info}/RECORD,,")
        wheel.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    print(path)


if __name__ == "__main__":
    main()
