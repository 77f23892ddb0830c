#!/usr/bin/env bash
# Fallback for machines where PyTerrier cannot download Terrier's jars itself but Maven can reach Maven Central
# (e.g. behind a proxy configured only in ~/.m2/settings.xml): copies the two jars PyTerrier looks for into
# ~/.pyterrier (or $PYTERRIER_HOME). Versions follow the installed PyTerrier's defaults unless given.
#   bash scripts/fetch_terrier_jars.sh [TERRIER_VERSION] [HELPER_VERSION]
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${PYTERRIER_HOME:-$HOME/.pyterrier}
terrier=${1:-5.11}
helper=${2:-0.0.8}
mkdir -p "$dest"
mvn -q dependency:copy -Dartifact="org.terrier:terrier-assemblies:${terrier}:jar:jar-with-dependencies" \
  -DoutputDirectory="$dest"
mvn -q dependency:copy -Dartifact="org.terrier:terrier-python-helper:${helper}" -DoutputDirectory="$dest"
ls -1 "$dest"/terrier-*.jar
