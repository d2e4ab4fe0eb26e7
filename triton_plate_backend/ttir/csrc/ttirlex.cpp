// triton_plate_backend.ttir._ttirlex: the TTIR tokenizer (ttir/lexer.py's `_TOKEN.findall`) as a hand-written scan
// of ASCII text: the same tokens, each the first alternative of the regular expression that matches, with its
// greedy extent (balanced `<...>` four levels below the outer pair, as the expression nests them).
//
// A plain CPython module (no torch). lexer.py keeps the regular expression as the reference and uses it for text
// that is not ASCII (`\s`, `\w` and `\d` are Unicode there) and where `tokenize` here gives None: a `//` comment
// that ends the text (the expression then backtracks into the comment). tests/test_compiled_lexer.py compares both
// on every fixture and printed pir text and on random text made of the characters the grammar cares about.
#include <Python.h>

namespace {

inline bool space(unsigned char c) { return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20); }
inline bool alpha(unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
inline bool digit(unsigned char c) { return c >= '0' && c <= '9'; }
inline bool word(unsigned char c) { return alpha(c) || digit(c) || c == '_'; }
inline bool name_char(unsigned char c) { return word(c) || c == '$' || c == '.' || c == '-'; }  // [\w$.-]
inline bool ident_char(unsigned char c) { return word(c) || c == '$' || c == '.'; }             // [\w$.]
inline bool hex(unsigned char c) { return digit(c) || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); }

// the end of `<B>` starting at s[p] == '<', where B may hold `level` more nested pairs; -1 when it does not match
Py_ssize_t angle(const unsigned char* s, Py_ssize_t n, Py_ssize_t p, int level) {
  for (Py_ssize_t q = p + 1; q < n;) {
    unsigned char c = s[q];
    if (c == '>') return q + 1;
    if (c == '<') {
      if (level == 0) return -1;
      q = angle(s, n, q, level - 1);
      if (q < 0) return -1;
    } else {
      ++q;
    }
  }
  return -1;
}

// the end of an optional `(?:<B4>)?` at q
Py_ssize_t opt_angle(const unsigned char* s, Py_ssize_t n, Py_ssize_t q) {
  if (q < n && s[q] == '<') {
    Py_ssize_t e = angle(s, n, q, 4);
    if (e > 0) return e;
  }
  return q;
}

Py_ssize_t run(const unsigned char* s, Py_ssize_t n, Py_ssize_t q, bool (*f)(unsigned char)) {
  while (q < n && f(s[q])) ++q;
  return q;
}

// `"(?:[^"\\\n]|\\.)*"` at s[p] == '"' (re.S: `.` is any character): its end, or -1
Py_ssize_t quoted(const unsigned char* s, Py_ssize_t n, Py_ssize_t p) {
  for (Py_ssize_t q = p + 1; q < n;) {
    unsigned char c = s[q];
    if (c == '"') return q + 1;
    if (c == '\n') return -1;
    if (c == '\\') {
      if (q + 1 >= n) return -1;
      q += 2;
    } else {
      ++q;
    }
  }
  return -1;
}

// the token's end at p (s[p] is not a space), by the expression's alternatives in order
Py_ssize_t token(const unsigned char* s, Py_ssize_t n, Py_ssize_t p) {
  unsigned char c = s[p];
  auto at = [&](Py_ssize_t q) -> int { return q < n ? s[q] : -1; };
  if (c == '%') {  // %[\w$.-]+(?:#\d+)?
    Py_ssize_t q = run(s, n, p + 1, name_char);
    if (q > p + 1) {
      if (at(q) == '#' && q + 1 < n && digit(s[q + 1])) q = run(s, n, q + 1, digit);
      return q;
    }
  }
  if (c == 'l' && n - p >= 5 && s[p + 1] == 'o' && s[p + 2] == 'c' && s[p + 3] == '(' && s[p + 4] == '#') {
    Py_ssize_t q = run(s, n, p + 5, name_char);  // loc\(#[\w$.-]+\)
    if (q > p + 5 && at(q) == ')') return q + 1;
  }
  if (alpha(c) || c == '_') return opt_angle(s, n, run(s, n, p + 1, ident_char));  // [A-Za-z_][\w$.]*(?:<B>)?
  if (c == '!' || c == '#') {                                                      // [!#][\w$.-]+(?:<B>)?
    Py_ssize_t q = run(s, n, p + 1, name_char);
    if (q > p + 1) return opt_angle(s, n, q);
  }
  if (c == '^') {  // \^[\w$.-]+
    Py_ssize_t q = run(s, n, p + 1, name_char);
    if (q > p + 1) return q;
  }
  if (c == '@') {  // @[\w$.-]+|@"..."
    Py_ssize_t q = run(s, n, p + 1, name_char);
    if (q > p + 1) return q;
    if (at(p + 1) == '"') {
      q = quoted(s, n, p + 1);
      if (q > 0) return q;
    }
  }
  if (c == '"') {
    Py_ssize_t q = quoted(s, n, p);
    if (q > 0) return q;
  }
  // [-+]?0x[0-9A-Fa-f]+|[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?
  Py_ssize_t d = (c == '-' || c == '+') ? p + 1 : p;
  if (at(d) == '0' && at(d + 1) == 'x' && d + 2 < n && hex(s[d + 2])) return run(s, n, d + 2, hex);
  if (d < n && digit(s[d])) {
    Py_ssize_t q = run(s, n, d, digit);
    if (at(q) == '.') q = run(s, n, q + 1, digit);
    if (at(q) == 'e' || at(q) == 'E') {
      Py_ssize_t e = q + 1;
      if (at(e) == '-' || at(e) == '+') ++e;
      if (e < n && digit(s[e])) q = run(s, n, e, digit);
    }
    return q;
  }
  if ((c == '-' && at(p + 1) == '>') || (c == ':' && at(p + 1) == ':')) return p + 2;  // -> ::
  return p + 1;  // [(){}\[\]<>,:=*?+|] and \S: one character
}

PyObject* tokenize(PyObject*, PyObject* arg) {
  if (!PyUnicode_Check(arg) || !PyUnicode_IS_ASCII(arg)) Py_RETURN_NONE;
  const unsigned char* s = PyUnicode_1BYTE_DATA(arg);
  Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
  PyObject* out = PyList_New(0);
  if (out == nullptr) return nullptr;
  Py_ssize_t p = 0;
  while (true) {
    // \s*(?://[^\n]*\s*)*
    bool comment = false;
    while (p < n && space(s[p])) ++p;
    while (p + 1 < n && s[p] == '/' && s[p + 1] == '/') {
      comment = true;
      while (p < n && s[p] != '\n') ++p;
      while (p < n && space(s[p])) ++p;
    }
    if (p >= n) {
      if (comment) {  // the expression backtracks into that comment: leave it to the expression
        Py_DECREF(out);
        Py_RETURN_NONE;
      }
      return out;
    }
    Py_ssize_t e = token(s, n, p);
    PyObject* tok = PyUnicode_FromStringAndSize(reinterpret_cast<const char*>(s + p), e - p);
    if (tok == nullptr || PyList_Append(out, tok) < 0) {
      Py_XDECREF(tok);
      Py_DECREF(out);
      return nullptr;
    }
    Py_DECREF(tok);
    p = e;
  }
}

PyMethodDef methods[] = {
    {"tokenize", tokenize, METH_O,
     "tokenize(text): lexer._TOKEN.findall(text) for ASCII text, or None (then the expression runs)"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ttirlex", "The TTIR tokenizer as a compiled scan.", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__ttirlex(void) { return PyModule_Create(&module); }
