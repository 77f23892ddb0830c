"""The pinned upstream files of the ``trec-dl`` data set: per year, BM25's candidates, run, qrels and topics, and the
four more first stages rank_llm publishes over the same judged queries (each as candidates with text and as a TREC
run file).

Every file is fetched from its upstream commit and checked by sha256 (superb.data.fetch); offline, from
``$SUPERB_DATA_MIRROR/trec-dl/`` (the first stages under ``first-stages/FOLDER/``, their candidates possibly gzipped:
the sha256 is the upstream JSON's, checked after decompression).
"""

from __future__ import annotations

from superb.data.fetch import PinnedFile

RANK_LLM = "916102c7de2f7348a64427b89300946657997098"  # BM25's candidates and run
RANK_LLM_FIRST_STAGES = "a42639233a3d36f2c5996c2a125ed2319c4742dd"  # the four other first stages
ANSERINI_TOOLS = "5b819c1a45c8a0a3ec9426f476694f44a29dfaf3"
_RANK_LLM_RAW = f"https://raw.githubusercontent.com/castorini/rank_llm/{RANK_LLM}/retrieve_results/BM25/"
_FIRST_STAGES_RAW = f"https://raw.githubusercontent.com/castorini/rank_llm/{RANK_LLM_FIRST_STAGES}/retrieve_results/"
_TOOLS_RAW = f"https://raw.githubusercontent.com/castorini/anserini-tools/{ANSERINI_TOOLS}/"


def _year(yy: str, topics: str, sizes: tuple[int, int, int, int], sha256: tuple[str, str, str, str]
          ) -> dict[str, PinnedFile]:
    """One year's four pinned files: candidates, BM25 run, qrels, topics (sizes and sha256 in that order)."""
    names = (f"retrieve_results_dl{yy}.json", f"trec_results_dl{yy}.txt", f"qrels.dl{yy}-passage.txt", topics)
    urls = (_RANK_LLM_RAW + names[0], _RANK_LLM_RAW + names[1], _TOOLS_RAW + "qrels/" + names[2],
            _TOOLS_RAW + "topics/" + names[3])
    return {role: PinnedFile(name, url, size, sha) for role, name, url, size, sha
            in zip(("candidates", "bm25", "qrels", "topics"), names, urls, sizes, sha256)}


FILES: dict[int, dict[str, PinnedFile]] = {
    2019: _year("19", "topics.dl19-passage.txt", (2306085, 190529, 187092, 1764), (
        "4f3e4aba8bb68c1b38405da010f44537f31d3b5fff7088ef97c03caed1076674",
        "cbada2e4f710f8cafb8f1fd54e2289011b3273cdc044adb2380af21f63a6c861",
        "8a1f10d550732e4cd91d7fc49846a3784de4040972f583e69285a88f3c5fee92",
        "518992da259fb61f64e4790791df91a7b42ea5773f374aed59220ebb51d58d90")),
    2020: _year("20", "topics.dl20.txt", (2912805, 240316, 218617, 8394), (
        "68b0ea4515ea022de921d54d5a53b4e93ed2f2993d350323c3173e47f3cea9f0",
        "fba5d55aa8335bd1c74f7860dee354e69986b627c640b34ba47e084e311c24d2",
        "60d4c34561f9687f8f73e0a752ba80ab80159b3e9c1bedd0a351f747ed6f5684",
        "726cb4018b85a335fcbe09004df7f084ec1bf20531961d9af7b0c71dd609e69b")),
}

#: short name -> (rank_llm's folder, retriever); ``first_stages = [...]`` in a spec takes the short names
FIRST_STAGES: dict[str, tuple[str, str]] = {
    "bm25_rm3": ("BM25_RM3", "Anserini BM25 + RM3"),
    "splade_pp_ed": ("SPLADE_P_P_ENSEMBLE_DISTIL", "SPLADE++ EnsembleDistil"),
    "tasb": ("D_BERT_KD_TASB", "DistilBERT KD TAS-B"),
    "ada2": ("OPEN_AI_ADA2", "OpenAI ada-002"),
}

# (candidates JSON bytes, sha256; TREC run bytes, sha256) per first stage and year: the JSONs' sha256 as the mirror's
# SOURCE.md gives them (the upstream files, before the mirror gzipped them), the run files' computed from the files.
_FIRST_STAGE_SUMS: dict[tuple[str, int], tuple[int, str, int, str]] = {
    ("bm25_rm3", 2019): (2360422, "b5ab68b20a83b5f718bfa0d6f788b2f839100123e85c0b95768331d01c676631",
                         191863, "fd1b5b6358731eb82a42f240b27e2ec061b087a64dff8d61e9bc4f4e61175325"),
    ("bm25_rm3", 2020): (2932402, "22c8290ef0187082a68fde70f5bef0af8e14619d8110a6a92fde97d64e7c31ac",
                         241312, "7d21a75df074dcaf7dd9ac7c45fea29c17c5a13a72381a6c1ba6ec9eed49f156"),
    ("splade_pp_ed", 2019): (2149817, "2b4a11fe6877a4cb0138426add49b3b70bc2d46390ce5a9b0120cca26cec4099",
                             147985, "5e09e4219740fd9b2a57637fccf6d00932c938c47a07b97ce0852c0b2596a4e1"),
    ("splade_pp_ed", 2020): (2669777, "58fc0d071956898e40384b781217f5a945b2b9dc049045ad9c865521e52a3fbd",
                             186223, "24062fcd8b8dfdf9f2710907c786541c870e8463d5dadea6b9e903821694918e"),
    ("tasb", 2019): (2169799, "6af564b78da890ded64787ca4c6d32de232bfe5b4030e1ca868a8fc75d79baec",
                     190741, "194ac7678312edbbd9aeb322e5b00fac63ecf081fccc2dd88e4c0dd2d8fc255e"),
    ("tasb", 2020): (2702397, "a9eb6abdc576d1f3fd17047fc437843c35d6f45ee61abc395986ce3ad932b33b",
                     240082, "cc4765e2c732caa704c8df0d5af06fe8e02992893e77c676f4f31b3d22d9b05f"),
    ("ada2", 2019): (2154866, "9b6e71e0c3731acd4e49aeb9fd79852d0f5ac2641cd67f1984d40e47325eb51d",
                     193174, "e0e480ce3dc8673b56a457b885d8be1879704ab00d371b4cbadca3ac802ecc39"),
    ("ada2", 2020): (2690543, "2c56701e81cb8bdda9aeba9960fd4c646b243fd4ac8e6d9b6dfc810e00d58fde",
                     243029, "27998342e27a592873e373835370bb264815e3ba325d28cfd9a7b98e193f0181"),
}


def first_stage_files(name: str, year: int) -> dict[str, PinnedFile]:
    """{"candidates": JSON with text, "run": TREC run} of first stage ``name`` (FIRST_STAGES) in ``year``."""
    folder = FIRST_STAGES[name][0]
    yy = str(year)[2:]
    json_bytes, json_sha, run_bytes, run_sha = _FIRST_STAGE_SUMS[name, year]
    local = f"first-stages/{folder}/"
    return {"candidates": PinnedFile(local + f"retrieve_results_dl{yy}.json",
                                     _FIRST_STAGES_RAW + f"{folder}/retrieve_results_dl{yy}.json", json_bytes, json_sha),
            "run": PinnedFile(local + f"trec_results_dl{yy}.txt",
                              _FIRST_STAGES_RAW + f"{folder}/trec_results_dl{yy}.txt", run_bytes, run_sha)}
