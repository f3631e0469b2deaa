"""The family registry: a module-level dict filled by one decorator per family."""

_FAMILIES = {}


def register(cls):
    """Class decorator: add an exponential family to the registry under ``cls.name``.

    Parameters
    ----------
    cls : type
        A subclass of :class:`efvi.expfam.ExponentialFamily` with a unique ``name``.

    Returns
    -------
    cls : type
        The same class, so the decorator can sit on the class definition.

    Raises
    ------
    ValueError
        If another family already has the name.  A class defined again in the
        same module under the same name (a script or notebook cell run twice)
        is the same family and replaces the earlier definition.
    """
    name = cls.name
    known = _FAMILIES.get(name, cls)
    if known is not cls and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"a family named {name!r} is already registered: {known!r}")
    _FAMILIES[name] = cls
    return cls


def get(name):
    """Return the family registered under ``name``.

    Parameters
    ----------
    name : str
        A registered family name, e.g. ``"gamma"``.

    Raises
    ------
    ValueError
        If no family has that name; the message lists the known names.
    """
    try:
        return _FAMILIES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown exponential family {name!r}; known families: {', '.join(names())}"
        ) from None


def names():
    """Return the sorted list of registered family names."""
    return sorted(_FAMILIES)
