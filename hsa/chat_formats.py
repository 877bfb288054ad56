"""The input layout readers, under the name they had before :mod:`hsa.formats` (one module per layout).

Kept so that ``from hsa.chat_formats import convert, convert_messages`` goes on working; new code imports
from :mod:`hsa.formats`.
"""

from hsa.formats import SHAREGPT_ROLES, convert, convert_messages

__all__ = ["convert", "convert_messages", "SHAREGPT_ROLES"]
