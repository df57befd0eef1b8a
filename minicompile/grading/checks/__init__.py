"""One module per exercise file: ``exNN_topic.py`` checks ``exercises/exNN_topic.py``."""
