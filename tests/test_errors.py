"""Every error the library raises is importable from the package top (issue 24, the API)."""

import inspect
import subprocess
import sys

import skill_library
from skill_library import errors


def _error_classes() -> dict[str, type]:
    return {
        name: cls
        for name, cls in inspect.getmembers(errors, inspect.isclass)
        if cls.__module__ == errors.__name__ and issubclass(cls, BaseException)
    }


def test_every_error_class_in_errors_is_exported_from_the_package() -> None:
    classes = _error_classes()
    assert "SkillUsageError" in classes and "SkillPolicyError" in classes
    missing = sorted(set(classes) - set(skill_library.__all__))
    assert not missing, f"not in skill_library.__all__: {missing}"
    for name, cls in classes.items():
        assert getattr(skill_library, name) is cls, name


def test_every_error_class_derives_from_the_library_base() -> None:
    stray = [n for n, c in _error_classes().items() if not issubclass(c, errors.SkillLibraryError)]
    assert not stray, f"not a SkillLibraryError: {stray}"


def test_errors_defined_by_concept_modules_are_the_ones_in_errors() -> None:
    from skill_library import deploy, tenancy
    from skill_library.governance import suite
    from skill_library.patterns import core

    assert core.PatternError is errors.PatternError
    assert suite.SuiteError is errors.SuiteError
    assert tenancy.InvalidTenantError is errors.InvalidTenantError
    assert deploy.DestinationNotEmptyError is errors.DestinationNotEmptyError


def test_importing_the_errors_pulls_in_no_heavy_module() -> None:
    code = (
        "import sys; from skill_library import SkillUsageError, LockTimeoutError; "
        "heavy = [m for m in ('torch', 'chromadb', 'sqlalchemy') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
