"""Search in each edition's language, registered through ``app.add_search_language``.

Sphinx has no Korean search, and its Chinese one (jieba) does not know the book's terms. An edition
names its search in ``book/editions.toml``:

- ``korean``: English words stemmed as in English; each Korean word indexed as written and without its
  particle (강도가, 강도는 and 강도를 are all 강도), and a query word looked up the same way;
- ``chinese``: jieba, taught the glossary's terms (``book/glossary.csv``) so that each is indexed whole,
  and the same words found in a query by the browser.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.search.en import SearchEnglish
from sphinx.search.zh import SearchChinese

from .common import entry
from .glossary import glossary_rows

# Korean particles (조사) and copula endings that follow a noun, longest first: 강도가, 강도는 and
# 강도를 are all the word 강도. The index holds each word as written and without its particle;
# a query word is looked up as typed, then without its particle.
KOREAN_PARTICLES = sorted(
    [
        "에서부터",
        "으로부터",
        "이라는",
        "이라고",
        "이라면",
        "이지만",
        "이므로",
        "에서는",
        "에서도",
        "에서의",
        "에게서",
        "으로는",
        "으로도",
        "으로서",
        "으로써",
        "으로의",
        "로부터",
        "에게는",
        "과는",
        "와는",
        "과의",
        "와의",
        "과도",
        "와도",
        "에서",
        "에게",
        "에는",
        "에도",
        "에의",
        "으로",
        "로는",
        "로도",
        "로서",
        "로써",
        "로의",
        "라는",
        "라고",
        "라면",
        "이다",
        "이며",
        "이고",
        "이면",
        "이나",
        "이란",
        "이든",
        "까지",
        "부터",
        "처럼",
        "보다",
        "만큼",
        "마다",
        "조차",
        "밖에",
        "대로",
        "이랑",
        "하고",
        "의",
        "은",
        "는",
        "이",
        "가",
        "을",
        "를",
        "에",
        "와",
        "과",
        "도",
        "만",
        "로",
        "나",
        "란",
        "며",
        "랑",
    ],
    key=len,
    reverse=True,
)
HANGUL_WORD = re.compile(r"[\uac00-\ud7a3]+")
SCRIPT_RUN = re.compile(r"[\uac00-\ud7a3]+|[^\uac00-\ud7a3]+")


def korean_stems(word: str) -> list[str]:
    """``word`` without each particle it may end in (강도가 -> [강도]); at least one syllable is kept."""
    return [word[: -len(p)] for p in KOREAN_PARTICLES if word.endswith(p) and len(word) > len(p)]


# The query side, in the browser: a Korean word unknown to the index is looked up without its
# particle; a Chinese run of characters is cut into the longest words the index knows, the way
# jieba cut the pages (什么是算术强度 -> 算术强度), leaving out words that only ask the question.
SPLITTER_JS = r"""
var EDITION_PARTICLES = %(particles)s;
var EDITION_QUESTION_WORDS = new Set(%(question_words)s);
var splitQuery = (query) => {
  const index = (typeof Search !== "undefined" && Search._index) || {};
  const known = (w) => [index.terms, index.titleterms].some(
    (t) => t && Object.prototype.hasOwnProperty.call(t, w.toLowerCase()));
  const out = [];
  const words = query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu).filter((t) => t);
  for (const word of words) {
    for (const run of word.match(/[\u3400-\u9fff\uf900-\ufaff]+|[\uac00-\ud7a3]+|[^\u3400-\u9fff\uf900-\ufaff\uac00-\ud7a3]+/gu)) {
      if (/^[\uac00-\ud7a3]+$/.test(run)) {
        const stems = EDITION_PARTICLES.filter((p) => run.endsWith(p) && run.length > p.length)
          .map((p) => run.slice(0, run.length - p.length));
        out.push(known(run) ? run : (stems.find(known) || run));
      } else if (/^[\u3400-\u9fff\uf900-\ufaff]+$/.test(run)) {
        let i = 0;
        while (i < run.length) {
          let j = run.length;
          while (j > i + 1 && !known(run.slice(i, j))) j--;
          const piece = run.slice(i, j);
          if (known(piece) && !EDITION_QUESTION_WORDS.has(piece)) out.push(piece);
          else if (j - i > 1 && !EDITION_QUESTION_WORDS.has(piece)) out.push(piece);
          i = j;
        }
      } else {
        out.push(run);
      }
    }
  }
  return out;
};
"""
CHINESE_QUESTION_WORDS = ["什么", "什么是", "为什么", "怎么", "怎样", "如何", "哪些", "哪个", "多少", "是否", "是不是"]


def _splitter() -> str:
    return SPLITTER_JS % {
        "particles": json.dumps(KOREAN_PARTICLES, ensure_ascii=False),
        "question_words": json.dumps(CHINESE_QUESTION_WORDS, ensure_ascii=False),
    }


class SearchKorean(SearchEnglish):
    """English words stemmed as in English; each Korean word indexed as written and without its particle."""

    lang = "ko"
    language_name = "Korean"
    js_splitter_code = _splitter()
    js_stemmer_code = (
        SearchEnglish.js_stemmer_code
        + "\nvar EnglishStemmer = Stemmer;\n"
        + "Stemmer = function () { const en = new EnglishStemmer();"
        + " this.stemWord = (w) => (/[\\uac00-\\ud7a3]/.test(w) ? w : en.stemWord(w)); };\n"
    )

    def split(self, input: str) -> list[str]:
        words = []
        for token in super().split(input):  # FLOPs는 -> FLOPs (a particle glued to a Latin word is dropped)
            runs = SCRIPT_RUN.findall(token)
            for i, run in enumerate(runs):
                if HANGUL_WORD.fullmatch(run):
                    if i and run in KOREAN_PARTICLES:
                        continue
                    words += [run, *korean_stems(run)]
                else:
                    words.append(run)
        return words

    def stem(self, word: str) -> str:
        return word if HANGUL_WORD.search(word) else super().stem(word)


class SearchChineseSegmented(SearchChinese):
    """jieba for the pages (as Sphinx does), and the same words found in a query by the browser."""

    js_splitter_code = _splitter()

    def init(self, options: dict[str, str]) -> None:
        super().init(options)
        self.single = set(options.get("single_words", "").split())

    def word_filter(self, stemmed_word: str) -> bool:
        return len(stemmed_word) > 1 or stemmed_word in self.single  # 块 (tile) is a word on its own

    def stem(self, word: str) -> str:
        # a Latin word is stemmed as the browser stems the query (OPs -> op), whatever its length
        return self.stemmer.stemWord(word.lower()) if self.latin1_letters.fullmatch(word) else word.lower()


#: The searches an edition can name in book/editions.toml (bookeditions.SEARCHES lists the same names).
SEARCHES: dict[str, type[SearchEnglish | SearchChinese]] = {
    "korean": SearchKorean,
    "chinese": SearchChineseSegmented,
}


def _chinese_search_words(app: Sphinx, config: Any) -> None:
    """Teach the Chinese search's word segmenter (jieba) the glossary's terms, so each is indexed whole."""
    own = entry(config)
    if own.search != "chinese":
        return
    words = set()
    for row in glossary_rows():
        for term in re.split(r"\s*/\s*", re.sub(r"[（(][^）)]*[）)]", "", row[own.code])):
            if re.search(r"[\u4e00-\u9fff]", term) and " " not in term.strip():
                words.add(term.strip())
    path = Path(app.doctreedir) / "jieba-glossary.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{word} 100 n\n" for word in sorted(words)), encoding="utf-8")
    single = " ".join(sorted(word for word in words if len(word) == 1))
    config.html_search_options = {**(config.html_search_options or {}), "dict": str(path), "single_words": single}


def _register(app: Sphinx, config: Any) -> None:
    """Index the edition with the search its registry entry names (Sphinx's own for the language if none)."""
    search = entry(config).search
    if search is not None:
        cls = SEARCHES[search]
        app.add_search_language(type(cls.__name__, (cls,), {"lang": entry(config).code}))


def setup(app: Sphinx) -> None:
    app.connect("config-inited", _register)
    app.connect("config-inited", _chinese_search_words)
