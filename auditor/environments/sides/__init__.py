"""The side environments' nox sessions (noxfile.py), in a folder of their own: nox runs from the
noxfile's folder, and `python -m virtualenv` there would import a module of that folder before the
standard library's (auditor/upgrade/bisect.py shadowed `bisect`)."""
