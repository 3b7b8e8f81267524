"""``dataclass`` and ``field`` for the modules on the merge driver's quick path, without ``dataclasses``.

Importing ``dataclasses`` (and the ``inspect`` it imports) costs about 15 ms at start-up, and each class it
builds about a millisecond more (it writes and compiles its methods); the driver's quick path has a
budget of 4x a bare Python start-up (``bench/bench_merge.py``). The type checker sees
``dataclasses.dataclass`` itself; at run time these build the same methods from closures: ``__init__``
(positional and keyword, defaults, ``field(default_factory=...)``, ``__post_init__``), ``__repr__``,
``__eq__``, ``__hash__`` (frozen classes; others are unhashable, as with ``dataclasses``), frozen
assignment refused, ``__match_args__``. Not supported (and not used on that path): ``kw_only``,
``InitVar``, ``ClassVar`` fields, ``dataclasses.fields``/``asdict``/``replace`` on these classes.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dataclasses import dataclass, field
else:
    _MISSING = object()

    class _Factory:
        __slots__ = ("make",)

        def __init__(self, make):
            self.make = make

    def field(*, default=_MISSING, default_factory=_MISSING):
        if default_factory is not _MISSING:
            return _Factory(default_factory)
        if default is _MISSING:
            raise TypeError("field() needs a default or a default_factory here")
        return default

    def _fields_of(cls):
        names = []
        for base in reversed(cls.__mro__[1:]):
            names += [n for n in getattr(base, "__light_fields__", ()) if n not in names]
        own = cls.__dict__.get("__annotations__", {})
        names += [n for n in own if n not in names and "ClassVar" not in str(own[n])]
        return names

    def _build(cls, frozen):
        names = _fields_of(cls)
        defaults = {}
        for name in names:
            for klass in cls.__mro__:
                if name in klass.__dict__:
                    defaults[name] = klass.__dict__[name]
                    break
        for name, value in defaults.items():
            if isinstance(value, _Factory) and name in cls.__dict__:
                delattr(cls, name)
        count = len(names)
        qualname = cls.__qualname__
        setter = object.__setattr__

        def __init__(self, *args, **kwargs):
            if not kwargs and len(args) == count:  # every field given in order: the common call, made quick
                for name, value in zip(names, args, strict=True):
                    setter(self, name, value)
                post = getattr(self, "__post_init__", None)
                if post is not None:
                    post()
                return
            if len(args) > count:
                raise TypeError(f"{qualname}() takes {count} arguments, {len(args)} given")
            values = dict(zip(names, args, strict=False))
            for key, value in kwargs.items():
                if key not in names or key in values:
                    raise TypeError(f"{qualname}() got an unexpected or repeated argument {key!r}")
                values[key] = value
            for name in names:
                if name in values:
                    value = values[name]
                elif name in defaults:
                    value = defaults[name]
                    if isinstance(value, _Factory):
                        value = value.make()
                else:
                    raise TypeError(f"{qualname}() missing argument {name!r}")
                setter(self, name, value)
            post = getattr(self, "__post_init__", None)
            if post is not None:
                post()

        def __repr__(self):
            return f"{qualname}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"

        def __eq__(self, other):
            if other.__class__ is not self.__class__:
                return NotImplemented
            return all(getattr(self, n) == getattr(other, n) for n in names)

        cls.__init__ = __init__
        cls.__repr__ = __repr__
        cls.__eq__ = __eq__
        cls.__match_args__ = tuple(names)
        cls.__light_fields__ = tuple(names)
        if frozen:

            def __hash__(self):
                return hash(tuple(getattr(self, n) for n in names))

            def __setattr__(self, name, value):
                raise AttributeError(f"cannot assign to field {name!r} of frozen {qualname}")

            def __delattr__(self, name):
                raise AttributeError(f"cannot delete field {name!r} of frozen {qualname}")

            cls.__hash__ = __hash__
            cls.__setattr__ = __setattr__
            cls.__delattr__ = __delattr__
        else:
            cls.__hash__ = None
        return cls

    def dataclass(cls=None, /, *, frozen=False):
        def wrap(klass):
            return _build(klass, frozen)

        return wrap if cls is None else wrap(cls)


__all__ = ["dataclass", "field"]
