// An attribute of the objects a compiled walk reads, by its slot's offset: what `PyObject_GetAttr(obj, name)`
// gives (a new reference, or NULL with the error set), without its lookups in the type and the instance, for an
// object whose class keeps the attribute in a `__slots__` slot (a dataclass with slots=True: the emitter's PInst;
// VReg, Token, Buffer). Any other object, a class that finds the name otherwise first (a property, a subclass that
// overrides it, a __getattribute__ or __getattr__), an empty slot (AttributeError) or a class changed since its
// offset was learnt goes through PyObject_GetAttr, so the result and the error are always that call's.
//
// One per attribute name, at file scope: `SlotField f_mnemonic("mnemonic"); ... Ref m(f_mnemonic.get(inst));`;
// `f_mnemonic.set(inst, m)` writes it as PyObject_GenericSetAttr does.
// It remembers the offset for the last few classes it met (a walk reads one name of a few kinds of objects).
#pragma once

#include <Python.h>
#include <structmember.h>

namespace plate_fields {
namespace {  // each module its own copy: no symbol that the dynamic linker would bind across modules

struct SlotField {
  static constexpr int WAYS = 4;
  const char* text;
  PyObject* name = nullptr;                // interned
  PyTypeObject* types[WAYS] = {};          // the classes met (strong references); a fifth replaces the last
  unsigned int versions[WAYS] = {};        // their tp_version_tag when their offset was learnt
  Py_ssize_t offsets[WAYS] = {-1, -1, -1, -1};  // -1: that class reads the attribute by PyObject_GetAttr

  explicit SlotField(const char* t) : text(t) {}

  PyObject* get(PyObject* obj) {
    Py_ssize_t offset = offset_for(Py_TYPE(obj));
    if (offset >= 0) {
      PyObject* v = *(PyObject**)((char*)obj + offset);
      if (v != nullptr) {
        Py_INCREF(v);
        return v;
      }
    } else if (offset == -2) {
      return nullptr;
    }
    return PyObject_GetAttr(obj, name);
  }

  // PyObject_GenericSetAttr(obj, name, v) (which a frozen dataclass' __setattr__ does not stop: how a compiled
  // walk fills a fresh instruction): 0, or -1 with the error set
  int set(PyObject* obj, PyObject* v) {
    Py_ssize_t offset = offset_for(Py_TYPE(obj));
    if (offset == -2) return -1;
    if (offset < 0) return PyObject_GenericSetAttr(obj, name, v);
    PyObject** slot = (PyObject**)((char*)obj + offset);
    PyObject* old = *slot;
    Py_INCREF(v);
    *slot = v;
    Py_XDECREF(old);
    return 0;
  }

 private:
  // the slot's offset in instances of t; -1: read it by name; -2: an error (set)
  Py_ssize_t offset_for(PyTypeObject* t) {
    int k = 0;
    for (; k < WAYS; k++) {
      if (types[k] == t) break;
    }
    if (k < WAYS && versions[k] == t->tp_version_tag && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) return offsets[k];
    if (name == nullptr && (name = PyUnicode_InternFromString(text)) == nullptr) return -2;
    if (k == WAYS) {  // a class not met yet: the first free way (the last one once all are taken), so classes read in
      k = 0;          // turn (an instruction's fields read off one class, written on another) keep a way each
      while (k < WAYS - 1 && types[k] != nullptr) k++;
    }
    return learn(t, k);
  }

  // the offset for class t, kept in way k (its old class dropped)
  Py_ssize_t learn(PyTypeObject* t, int k) {
    Py_ssize_t offset = -1;
    // what PyObject_GenericGetAttr finds first: a member descriptor of an object slot is a data descriptor, so it
    // wins over an instance dict; the lookup also gives the class a valid version tag
    PyObject* d = t->tp_getattro == PyObject_GenericGetAttr ? _PyType_Lookup(t, name) : nullptr;
    if (d != nullptr && Py_TYPE(d) == &PyMemberDescr_Type && (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
      PyMemberDescrObject* md = (PyMemberDescrObject*)d;
      PyMemberDef* m = md->d_member;
      if (m->type == T_OBJECT_EX && !(m->flags & READONLY) && PyType_IsSubtype(t, md->d_common.d_type)) offset = m->offset;
    }
    Py_INCREF(t);
    Py_XDECREF(types[k]);
    types[k] = t;
    versions[k] = t->tp_version_tag;
    offsets[k] = offset;
    return offset;
  }
};

}  // namespace
}  // namespace plate_fields
