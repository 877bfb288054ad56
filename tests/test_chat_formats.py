"""Chat formats: Hermes/Qwen tags, Glaive v2, ToolACE, Anthropic blocks and Gemini contents converted to messages.

The ``*_LINES`` rows are verbatim public rows (sources: NousResearch hermes-function-calling-v1 card,
glaive-function-calling-v2 rows 25475 and 107105, Team-ACE/ToolACE (see TOOLACE_LINES), Anthropic Messages API
tool-use docs, Gemini function-calling docs; other layouts from the xLAM, LLaMA-Factory, BFCL, When2Call,
transformers and MCP docs).
"""

from __future__ import annotations

import copy
import json

import pytest

from hsa.formats import convert, convert_messages
from hsa.records import RecordError, normalize
from hsa.invariants import check_record

HERMES_LINES = [
    r'''{"id": "753d8365-0e54-43b1-9514-3f9b819fd31c", "conversations": [{"from": "system", "value": "You are a function calling AI model. You are provided with function signatures within <tools> </tools> XML tags. You may call one or more functions to assist with the user query. Don't make assumptions about what values to plug into functions.\n<tools>\n[{'type': 'function', 'function': {'name': 'search_flights', 'description': 'Searches for flights based on departure and destination cities, dates, class, and other preferences.', 'parameters': {'type': 'object', 'properties': {'departure_city': {'type': 'string', 'description': 'The city from which the flight will depart.'}, 'destination_city': {'type': 'string', 'description': 'The destination city for the flight.'}, 'departure_date': {'type': 'string', 'description': 'The departure date for the flight.', 'format': 'date'}, 'return_date': {'type': 'string', 'description': 'The return date for the flight.', 'format': 'date'}, 'class': {'type': 'string', 'description': 'The class of the flight ticket.', 'enum': ['economy', 'business', 'first']}, 'flexible_cancellation': {'type': 'boolean', 'description': 'Indicates if the search should filter for flights with flexible cancellation policies.'}}, 'required': ['departure_city', 'destination_city', 'departure_date', 'return_date', 'class']}}}]\n</tools>\nFor each function call return a json object with function name and arguments within <tool_call> </tool_call> tags with the following schema:\n<tool_call>\n{'arguments': <args-dict>, 'name': <function-name>}\n</tool_call>\n"}, {"from": "human", "value": "I'm planning a kayaking trip and looking to book flights from Los Angeles to Auckland. My departure is scheduled for July 10th, 2023, and I intend to return on July 24th, 2023. I would prefer to travel in economy class and would also like the option to have flexible cancellation policies for the tickets due to the uncertain nature of outdoor activities. Could you please search for flights that meet these criteria and provide me with the available options?"}, {"from": "gpt", "value": "<tool_call>\n{'arguments': {'departure_city': 'Los Angeles', 'destination_city': 'Auckland', 'departure_date': '2023-07-10', 'return_date': '2023-07-24', 'class': 'economy', 'flexible_cancellation': True}, 'name': 'search_flights'}\n</tool_call>\n"}, {"from": "tool", "value": "<tool_response>\n{\"name\": \"search_flights\", \"content\": {\"flights\": [{\"flight_number\": \"AA118\", \"airline\": \"American Airlines\", \"departure_airport\": \"LAX\", \"departure_city\": \"Los Angeles\", \"departure_date\": \"2023-07-10T08:00:00Z\", \"departure_terminal\": \"4\", \"arrival_airport\": \"AKL\", \"arrival_city\": \"Auckland\", \"arrival_date\": \"2023-07-11T14:25:00Z\", \"arrival_terminal\": \"I\", \"duration\": \"17h 25m\", \"class\": \"Economy\", \"price\": \"$950\", \"flexible_cancellation\": true}]}}\n</tool_response>\n"}, {"from": "gpt", "value": "Here are the available flight options with flexible cancellation policies for your kayaking trip from Los Angeles to Auckland: ..."}], "category": "E-commerce Platforms", "subcategory": "Kayak", "task": "Flight Search"}''',
    r'''{"id": "afba1f0c-3212-467d-8594-d72a06da4d05", "conversations": [{"from": "system", "value": "You are an expert structured information extraction AI model. You will be provided with documents to extract information from. You are also provided with the json schema to output extracted information in the function signatures within XML tags <tools></tools>. Don't make assumptions about what values to plug into json schema. \n<tools>\n[{\"type\": \"function\", \"function\": {\"name\": \"ExpertQAExtractor\", \"description\": \"Extracts a list of questions that ask how a concept or information from the document can be applied to a real-world situation. These assess ability to apply knowledge.\", \"parameters\": {\"type\": \"object\", \"properties\": {\"application_questions\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}}, \"required\": [\"application_questions\"]}}}]\n</tools>\nFor each extraction function call return a json object with function name and arguments followed by a <tool_call> tag with the following schema:\n<tool_call>\n{'arguments': <args-dict>, 'name': <function-name>}\n</tool_call>"}, {"from": "human", "value": "Can you help me extract queries from the following passage <passage> : A directed graph. ... </passage>"}, {"from": "gpt", "value": "<tool_call>\\n{\"arguments\": {\"queries\": ['How can the concept of graph traversal be applied to real-world situations, such as project management workflows or social networks?', 'Can you think of any other real-world scenarios where understanding and effectively using spatial positioning in a graph would be important?', 'In what ways can the concept of marking nodes be useful in problem-solving or decision-making processes?'], \"name\": \"ExpertQAExtractor\"}}\\n</tool_call>"}], "category": "Information Extraction", "subcategory": "Json Schema", "task": "Structured json schema extaction with function calling"}''',
]
GLAIVE_LINES = [
    r'''{"system": "SYSTEM: You are a helpful assistant with access to the following functions. Use them if required -\n{\n    \"name\": \"detect_language\",\n    \"description\": \"Detect the language of a given text\",\n    \"parameters\": {\n        \"type\": \"object\",\n        \"properties\": {\n            \"text\": {\n                \"type\": \"string\",\n                \"description\": \"The text to detect the language of\"\n            }\n        },\n        \"required\": [\n            \"text\"\n        ]\n    }\n}\n", "chat": "USER: I have a text here and I am not sure what language it is. Can you help me identify it?\n\n\nASSISTANT: Of course, I can help with that. Please provide me with the text. <|endoftext|>\n\n\nUSER: Here it is - \"Je suis un étudiant\"\n\n\nASSISTANT: <functioncall> {\"name\": \"detect_language\", \"arguments\": '{\"text\": \"Je suis un étudiant\"}'} <|endoftext|>\n\n\nFUNCTION RESPONSE: {\"language\": \"French\"}\n\n\nASSISTANT: The text you provided is in French. <|endoftext|>\n\n\n"}''',
    r'''{"system": "SYSTEM: You are a helpful assistant, with no access to external functions.\n\n", "chat": "USER: Assign this occupation to the appropriate category\nNurse\n\nASSISTANT: Healthcare <|endoftext|>\n\nUSER: What about an electrician?\n\nASSISTANT: Skilled Trades <|endoftext|>"}''',
]
#: Team-ACE/ToolACE rows. [0] is a whole row (10 turns) quoted verbatim from the dataset in a public tool-learning
#: data survey ("ToolACE中的样本"): names with spaces, a call without arguments, prose turns between calls, tools
#: with type "dict" and a top-level "required": null. [1] is the minimal ToolACE-shaped row this suite used to
#: expect None for (the layout is now converted). The call texts in the tests below ("[/madlibs-diceware(nphrase=2)]",
#: '[Market Trends API(trend_type="MARKET_INDEXES", country="us")]', '[Get Suggestion(term="popular", ...)]') are
#: verbatim ToolACE assistant turns quoted by public converters and training dumps.
TOOLACE_LINES = [
    r'''{"system": "You are an expert in composing functions. You are given a question and a set of possible functions. \nBased on the question, you will need to make one or more function/tool calls to achieve the purpose. \nIf none of the function can be used, point it out. If the given question lacks the parameters required by the function,\nalso point it out. You should only return the function call in tools call sections.\nHere is a list of functions in JSON format that you can invoke:\n[{\"name\": \"GetCompetitions\", \"description\": \"Retrieve a list of football competitions that are televised in Peru.\", \"parameters\": {\"type\": \"dict\", \"properties\": {}, \"required\": []}, \"required\": null}, {\"name\": \"Get Manager Placeholder Image\", \"description\": \"Retrieve the manager placeholder image in PNG format for a specific sport.\", \"parameters\": {\"type\": \"dict\", \"properties\": {\"sport\": {\"description\": \"The name of the sport for which the manager placeholder image is required.\", \"type\": \"string\"}}, \"required\": [\"sport\"]}, \"required\": null}, {\"name\": \"Search Competition API\", \"description\": \"Search for competitions in the sports domain\", \"parameters\": {\"type\": \"dict\", \"properties\": {\"name\": {\"description\": \"The name of the competition to search for\", \"type\": \"string\"}}, \"required\": [\"name\"]}, \"required\": null}, {\"name\": \"Get Category Image\", \"description\": \"Retrieve a category image for a specific sport or league.\", \"parameters\": {\"type\": \"dict\", \"properties\": {\"slug\": {\"description\": \"Slug of the sport or league, e.g. `france` `champions-league` `intl`.\", \"type\": \"string\", \"default\": \"france\"}}, \"required\": [\"slug\"]}, \"required\": null}]. \nShould you decide to return the function call(s). \nPut it in the format of [func1(params_name=params_value, params_name2=params_value2...), func2(params)]\n\nNO other text MUST be included. \n", "conversations": [{"from": "user", "value": "Hey, can you show me the list of football competitions that are currently televised in Peru?"}, {"from": "assistant", "value": "[GetCompetitions()]"}, {"from": "tool", "value": "[{\"name\": \"GetCompetitions\", \"results\": {\"competitions\": [{\"id\": 1, \"name\": \"Copa Libertadores\", \"startDate\": \"2023-02-15\", \"endDate\": \"2023-11-20\"}, {\"id\": 2, \"name\": \"Copa Sudamericana\", \"startDate\": \"2023-03-05\", \"endDate\": \"2023-10-25\"}, {\"id\": 3, \"name\": \"Liga 1 Peru\", \"startDate\": \"2023-02-03\", \"endDate\": \"2023-12-05\"}]}}]"}, {"from": "assistant", "value": "Here are the football competitions that are currently televised in Peru:\n\n1. Competition: Copa Libertadores\n   - Start Date: 2023-02-15\n   - End Date: 2023-11-20\n\n2. Competition: Copa Sudamericana\n   - Start Date: 2023-03-05\n   - End Date: 2023-10-25\n\n3. Competition: Liga 1 Peru\n   - Start Date: 2023-02-03\n   - End Date: 2023-12-05\n\nDo note that these dates represent the duration of the competitions for the given year. Is there anything else you would like to know?"}, {"from": "user", "value": "How important are manager images in sports marketing and branding?"}, {"from": "assistant", "value": "Manager images are quite significant in sports marketing and branding for several reasons:\n\n1. **Identity and Representation**: The image of a manager can become synonymous with the team's identity. It represents leadership and can convey the team's ethos and approach to the sport.\n\n2. **Fan Engagement**: Fans often form emotional connections with team managers. Images used in promotional materials can enhance this bond, making fans feel more connected to the team.\n\n3. **Merchandising**: The use of a manager's image on merchandise can boost sales. Fans are likely to purchase products featuring a well-respected or popular manager as a sign of support or admiration.\n\n4. **Media Relations**: Managers often serve as the face of the team in media appearances. Their image is crucial to creating a positive public perception and can influence media coverage and public relations efforts.\n\n5. **Sponsorship and Partnerships**: A manager with a strong public image can attract sponsorships and partnerships. Brands are more likely to collaborate with teams whose managers are well-regarded and have a positive public image.\n\nOverall, manager images are vital assets in sports branding, helping to shape team image and fan loyalty, while also playing a key role in commercial strategies. If you need any more specific information or examples, feel free to ask!"}, {"from": "user", "value": "I'd like to see this in practice! Can you fetch me a manager placeholder image for football? Let's bring these theories to life with some quality pixels."}, {"from": "assistant", "value": "[Get Manager Placeholder Image(sport=\"football\")]"}, {"from": "tool", "value": "[{\"name\": \"Get Manager Placeholder Image\", \"results\": {\"image\": \"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAZAAAAGQAQMAAAAew5lpAAAAA1BMVEX///+nxBvIAAAASElEQVR4nO3BAQ0AAADCoPdPbQ43oAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIB3AABUexBM.jpg\", \"sport_name\": \"football\"}}]"}, {"from": "assistant", "value": "Here is the manager placeholder image for football:\n\n![Manager Placeholder Image for Football](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAZAAAAGQAQMAAAAew5lpAAAAA1BMVEX///+nxBvIAAAASElEQVR4nO3BAQ0AAADCoPdPbQ43oAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIB3AABUexBM.jpg)\n\nThis image can typically be used in promotional content, social media, and anywhere a generic representation of a football manager is needed, particularly when no specific individual's image is available. This helps maintain the branding focus while keeping a professional look in all communications."}]}''',
    r'''{"system": "You are an expert in composing functions.\nHere is a list of functions in JSON format that you can invoke:\n[{\"name\":\"Market Trends API\",\"description\":\"Get trends\",\"parameters\":{\"type\":\"dict\",\"properties\":{\"country\":{\"type\":\"string\"}}}}]", "conversations": [{"from": "user", "value": "Show me US market trends."}, {"from": "assistant", "value": "[Market Trends API(country=\"us\")]"}]}''',
]
ANTHROPIC_LINES = [
    r'''{"system": "You are a helpful weather assistant.", "tools": [{"name": "get_weather", "description": "Get the current weather for a city.", "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}], "messages": [{"role": "user", "content": "What is the weather in San Francisco?"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"location": "San Francisco, CA"}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "15 degrees, sunny"}]}, {"role": "assistant", "content": [{"type": "text", "text": "It is 15 degrees and sunny in San Francisco."}]}]}''',
    r'''{"tools": [{"name": "get_weather", "description": "Get the current weather for a specified location", "input_schema": {"type": "object", "properties": {"location": {"type": "string", "description": "City name, e.g.: Beijing"}}, "required": ["location"]}}], "messages": [{"role": "user", "content": "What's the weather like in Beijing today?"}, {"content": [{"text": "Let me help you check the weather in Beijing.", "type": "text"}, {"id": "toolu_012f3meaYuYj9yPPuyuRVw9U", "input": {"location": "Beijing"}, "name": "get_weather", "type": "tool_use"}], "role": "assistant"}]}''',
]
GEMINI_LINES = [
    r'''{"contents": [{"role": "user", "parts": [{"text": "Turn the lights down to a romantic level"}]}, {"role": "model", "parts": [{"functionCall": {"name": "set_light_values", "args": {"brightness": 25, "color_temp": "warm"}}}]}, {"role": "user", "parts": [{"functionResponse": {"name": "set_light_values", "response": {"brightness": 25, "colorTemperature": "warm"}}}]}], "tools": [{"functionDeclarations": [{"name": "set_light_values", "description": "Sets the brightness and color temperature of a light.", "parameters": {"type": "object", "properties": {"brightness": {"type": "integer", "description": "Light level from 0 to 100. Zero is off and 100 is full brightness"}, "color_temp": {"type": "string", "enum": ["daylight", "cool", "warm"], "description": "Color temperature of the light fixture, which can be `daylight`, `cool` or `warm`."}}, "required": ["brightness", "color_temp"]}}]}]}''',
]
OTHER_NAMES = ["hf_transformers", "openai", "mcp", "gemini_messages", "xlam", "llamafactory",
               "sharegpt_parallel", "sharegpt_weight", "bfcl", "when2call"]
OTHER_LINES = [
    r'''{"messages": [{"role": "system", "content": "You are a bot that responds to weather queries. You should reply with the unit used in the queried location."}, {"role": "user", "content": "Hey, what's the temperature in Paris right now?"}, {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "get_current_temperature", "arguments": {"location": "Paris, France", "unit": "celsius"}}}]}, {"role": "tool", "name": "get_current_temperature", "content": "22.0"}], "tools": [{"type": "function", "function": {"name": "get_current_temperature", "description": "Get the current temperature at a location.", "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "The location to get the temperature for, in the format \"City, Country\""}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "The unit to return the temperature in."}}, "required": ["location", "unit"]}, "return": {"type": "number", "description": "The current temperature at the specified location in the specified units, as a float."}}}]}''',  # hf_transformers.jsonl row 0
    r'''{"tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a specific location", "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "The city name"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"}}, "required": ["location"]}}}, {"type": "function", "function": {"name": "search", "description": "Search the web for information", "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "Search query"}, "num_results": {"type": "integer", "description": "Number of results to return"}}, "required": ["query"]}}}], "messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "What's the weather in Beijing?"}, {"role": "assistant", "reasoning_content": "The user wants to know the weather in Beijing. I should use the get_weather tool.", "tool_calls": [{"id": "call_001", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\": \"Beijing\", \"unit\": \"celsius\"}"}}]}, {"role": "tool", "tool_call_id": "call_001", "content": "{\"temperature\": 22, \"condition\": \"sunny\", \"humidity\": 45}"}, {"role": "assistant", "reasoning_content": "Got the weather data. Let me format a nice response.", "content": "The weather in Beijing is currently sunny with a temperature of 22°C and 45% humidity."}]}''',  # openai.jsonl row 0
    r'''{"tools": [{"name": "get_weather_data", "title": "Weather Data Retriever", "description": "Get current weather data for a location", "inputSchema": {"type": "object", "properties": {"location": {"type": "string", "description": "City name or zip code"}}, "required": ["location"]}, "outputSchema": {"type": "object", "properties": {"temperature": {"type": "number", "description": "Temperature in celsius"}, "conditions": {"type": "string", "description": "Weather conditions description"}, "humidity": {"type": "number", "description": "Humidity percentage"}}, "required": ["temperature", "conditions", "humidity"]}}, {"name": "get_weather", "description": "查询指定城市的天气", "inputSchema": {"type": "object", "properties": {"city": {"type": "string", "description": "城市名称"}}, "required": ["city"], "additionalProperties": false}}], "messages": [{"role": "user", "content": "What's the weather in New York?"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather_data", "arguments": {"location": "New York"}}}]}, {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "{\"temperature\": 22.5, \"conditions\": \"Partly cloudy\", \"humidity\": 65}"}]}, {"role": "assistant", "content": "22.5°C and partly cloudy."}]}''',  # mcp.jsonl row 0
    r'''{"messages": [{"role": "user", "content": "Turn the lights down to a romantic level"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "set_light_values", "arguments": {"brightness": 25, "color_temp": "warm"}}}]}], "tools": [{"functionDeclarations": [{"name": "set_light_values", "description": "Sets the brightness and color temperature of a light.", "parameters": {"type": "object", "properties": {"brightness": {"type": "integer", "description": "Light level from 0 to 100. Zero is off and 100 is full brightness"}, "color_temp": {"type": "string", "enum": ["daylight", "cool", "warm"], "description": "Color temperature of the light fixture, which can be `daylight`, `cool` or `warm`."}}, "required": ["brightness", "color_temp"]}}]}]}''',  # gemini.jsonl row 1
    r'''{"query": "Where can I find live giveaways for beta access and games?", "tools": "[{\"name\": \"live_giveaways_by_type\", \"description\": \"Retrieve live giveaways from the GamerPower API based on the specified type.\", \"parameters\": {\"type\": {\"description\": \"The type of giveaways to retrieve (e.g., game, loot, beta).\", \"type\": \"str\", \"default\": \"game\"}}}]", "answers": "[{\"name\": \"live_giveaways_by_type\", \"arguments\": {\"type\": \"beta\"}}, {\"name\": \"live_giveaways_by_type\", \"arguments\": {\"type\": \"game\"}}]"}''',  # xlam.jsonl row 0
    r'''{"conversations": [{"from": "human", "value": "I need to calculate the area of a rectangle. The length is 5 units and the breadth is 3 units."}, {"from": "function_call", "value": "{\"name\": \"calculate_area\", \"arguments\": {\"shape\": \"rectangle\", \"dimensions\": [5, 3]}}"}, {"from": "observation", "value": "{\"area\": 15}"}, {"from": "gpt", "value": "The area of the rectangle with length 5 units and breadth 3 units is 15 square units."}, {"from": "human", "value": "What about a circle with a radius of 4 units?"}, {"from": "function_call", "value": "{\"name\": \"calculate_area\", \"arguments\": {\"shape\": \"circle\", \"dimensions\": [4]}}"}, {"from": "observation", "value": "{\"area\": 50.24}"}, {"from": "gpt", "value": "The area of the circle with radius 4 units is approximately 50.24 square units."}, {"from": "human", "value": "And a square with side length 7 units?"}, {"from": "function_call", "value": "{\"name\": \"calculate_area\", \"arguments\": {\"shape\": \"square\", \"dimensions\": [7]}}"}, {"from": "observation", "value": "{\"area\": 49}"}, {"from": "gpt", "value": "The area of the square with side length 7 units is 49 square units."}], "tools": "[{\"name\": \"calculate_area\", \"description\": \"Calculate the area of a given shape\", \"parameters\": {\"type\": \"object\", \"properties\": {\"shape\": {\"type\": \"string\", \"description\": \"The shape for which to calculate the area\"}, \"dimensions\": {\"type\": \"array\", \"items\": {\"type\": \"number\"}, \"description\": \"The dimensions required to calculate the area\"}}, \"required\": [\"shape\", \"dimensions\"]}}, {\"name\": \"calculate_discount\", \"description\": \"Calculate the discounted price based on original price and discount percentage\", \"parameters\": {\"type\": \"object\", \"properties\": {\"original_price\": {\"type\": \"number\", \"description\": \"The original price of the item\"}, \"discount_percentage\": {\"type\": \"number\", \"description\": \"The discount percentage\"}}, \"required\": [\"original_price\", \"discount_percentage\"]}}]"}''',  # llamafactory.jsonl row 0
    r'''{"conversations": [{"from": "human", "value": "Weather in Tokyo and Paris?"}, {"from": "function_call", "value": "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"}, {"from": "observation", "value": "{\"city\": \"Tokyo\", \"weather\": \"sunny\"}"}, {"from": "observation", "value": "{\"city\": \"Paris\", \"weather\": \"rain\"}"}, {"from": "gpt", "value": "Tokyo is sunny, Paris is rainy."}], "system": "You can call get_weather.", "tools": "[{\"name\": \"get_weather\", \"description\": \"Get weather\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}]"}''',  # sharegpt_parallel.jsonl row 0
    r'''{"conversations": [{"from": "system", "value": "sys", "weight": null}, {"from": "human", "value": "hi", "weight": 0}, {"from": "gpt", "value": "hello", "weight": 1}]}''',
    r'''{"id": "simple_0", "question": [[{"role": "user", "content": "Find the area of a triangle with a base of 10 units and height of 5 units."}]], "function": [{"name": "calculate_triangle_area", "description": "Calculate the area of a triangle given its base and height.", "parameters": {"type": "dict", "properties": {"base": {"type": "integer", "description": "The base of the triangle."}, "height": {"type": "integer", "description": "The height of the triangle."}, "unit": {"type": "string", "description": "The unit of measure (defaults to 'units' if not specified)"}}, "required": ["base", "height"]}}]}''',  # bfcl.jsonl row 0
    r'''{"tools": [{"name": "get_stations_within_1_km", "description": "Fetch the nearest EV charging stations within a 1 km radius from a given latitude and longitude.", "parameters": {"type": "dict", "properties": {"region": {"description": "The region code (us for United States, ca for Canada, uk for United Kingdom, nz for New Zealand, hk for Hong Kong).", "type": "str", "default": ""}, "latitude": {"description": "The latitude of the location for which to find nearby charging stations.", "type": "int", "default": "40.733"}, "longitude": {"description": "The longitude of the location for which to find nearby charging stations.", "type": "int", "default": "-74.202"}}}, "required": ["region", "latitude", "longitude"]}], "messages": [{"role": "user", "content": "What are the trending topics in New York City today?"}, {"role": "assistant", "content": "Apologies, but I'm unable to provide real-time information or perform web searches. You may want to check a reliable news source for that."}]}''',  # when2call.jsonl row 0
]

#: OpenAI's legacy function-calling format (functions, function_call, role "function").
LEGACY_LINES = [
    r'''{"messages": [{"role": "system", "content": "Use get_weather to look up weather."}, {"role": "user", "content": "Tokyo?"}, {"role": "assistant", "content": null, "function_call": {"name": "get_weather", "arguments": "{\"city\": \"Tokyo\"}"}}, {"role": "function", "name": "get_weather", "content": "sunny"}], "functions": [{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]}''',  # edge_7.jsonl row 0
]

HERMES, GLAIVE, TOOLACE, ANTHROPIC, GEMINI, OTHER = ([json.loads(line) for line in lines]
                                                    for lines in (HERMES_LINES, GLAIVE_LINES, TOOLACE_LINES,
                                                                  ANTHROPIC_LINES, GEMINI_LINES, OTHER_LINES))


def _calls(*calls):
    """OpenAI tool calls from (id, name, arguments) triples."""
    return [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]


def _accepted(row):
    """The converted row passes normalize and check_record with no violation."""
    record = normalize(row)
    assert check_record(record) == []
    return record


# --------------------------------------------------------------------------- Hermes / Qwen tags

FLIGHTS_RESULT = (
    '{"name": "search_flights", "content": {"flights": [{"flight_number": "AA118", "airline": "American Airlines", '
    '"departure_airport": "LAX", "departure_city": "Los Angeles", "departure_date": "2023-07-10T08:00:00Z", '
    '"departure_terminal": "4", "arrival_airport": "AKL", "arrival_city": "Auckland", '
    '"arrival_date": "2023-07-11T14:25:00Z", "arrival_terminal": "I", "duration": "17h 25m", "class": "Economy", '
    '"price": "$950", "flexible_cancellation": true}]}}')


def test_hermes_row_converts_exactly():
    """The real Hermes row: Python-literal <tools> -> tools, <tool_call> -> tool_calls, <tool_response> -> tool."""
    out = convert(HERMES[0])
    system = HERMES[0]["conversations"][0]["value"]
    assert out["messages"] == [
        {"role": "system", "content": system[:system.index("<tools>\n[")] + system[system.index("</tools>\n") + 9:]},
        {"role": "user", "content": HERMES[0]["conversations"][1]["value"]},
        {"role": "assistant", "content": "", "tool_calls": _calls(("call_1", "search_flights", {
            "departure_city": "Los Angeles", "destination_city": "Auckland", "departure_date": "2023-07-10",
            "return_date": "2023-07-24", "class": "economy", "flexible_cancellation": True}))},
        {"role": "tool", "tool_call_id": "call_1", "name": "search_flights", "content": FLIGHTS_RESULT},
        {"role": "assistant", "content": "Here are the available flight options with flexible cancellation policies "
                                         "for your kayaking trip from Los Angeles to Auckland: ..."}]
    assert out["messages"][0]["content"].startswith("You are a function calling AI model. You are provided with "
                                                    "function signatures within <tools> </tools> XML tags.")
    assert "search_flights" not in out["messages"][0]["content"]
    assert out["tools"] == [{"type": "function", "function": {
        "name": "search_flights",
        "description": "Searches for flights based on departure and destination cities, dates, class, and other "
                       "preferences.",
        "parameters": {"type": "object", "properties": {
            "departure_city": {"type": "string", "description": "The city from which the flight will depart."},
            "destination_city": {"type": "string", "description": "The destination city for the flight."},
            "departure_date": {"type": "string", "description": "The departure date for the flight.",
                               "format": "date"},
            "return_date": {"type": "string", "description": "The return date for the flight.", "format": "date"},
            "class": {"type": "string", "description": "The class of the flight ticket.",
                      "enum": ["economy", "business", "first"]},
            "flexible_cancellation": {"type": "boolean", "description": "Indicates if the search should filter for "
                                      "flights with flexible cancellation policies."}},
            "required": ["departure_city", "destination_city", "departure_date", "return_date", "class"]}}}]
    assert {k: out[k] for k in ("id", "category", "subcategory", "task")} == {
        "id": "753d8365-0e54-43b1-9514-3f9b819fd31c", "category": "E-commerce Platforms", "subcategory": "Kayak",
        "task": "Flight Search"}
    assert "conversations" not in out
    assert len(out["notes"]) == 1 and "Hermes" in out["notes"][0]
    _accepted(out)


def test_hermes_real_row_with_name_inside_arguments_is_refused_with_a_hint():
    """The real extraction row puts 'name' inside 'arguments': a RecordError says where and how to fix it."""
    with pytest.raises(RecordError) as exc:
        convert(HERMES[1])
    assert exc.value.reason == "bad tool call"
    assert "conversations[2]" in exc.value.detail and "inside 'arguments'" in exc.value.detail


QWEN_SYSTEM = ("You are Qwen.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
               "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
               '{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": '
               '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n'
               '{"name": "get_time", "description": "Time", "parameters": {"type": "object", "properties": '
               '{"tz": {"type": "string"}}}}\n</tools>\n\nFor each function call, return a json object within '
               "<tool_call></tool_call> XML tags.")


def _qwen_row(**extra):
    return {"messages": [
        {"role": "system", "content": QWEN_SYSTEM},
        {"role": "user", "content": "Weather and time in Paris?"},
        {"role": "assistant", "content": "Checking both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                         "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{'name': 'get_time', "
                                         "'arguments': {'tz': 'Europe/Paris'}}\n</tool_call>"},
        {"role": "tool", "content": "<tool_response>\n{\"name\": \"get_time\", \"content\": \"14:00\"}\n"
                                    "</tool_response>\n<tool_response>\nsunny\n</tool_response>"},
        {"role": "assistant", "content": "Sunny, 14:00."}], **extra}


def test_qwen_messages_with_tools_per_line_and_parallel_calls():
    """Qwen-style messages: one tool per line, two calls with text, results paired by declared name then order."""
    out = convert(_qwen_row())
    assert out["messages"] == [
        {"role": "system", "content": QWEN_SYSTEM[:QWEN_SYSTEM.index("<tools>\n")]
         + QWEN_SYSTEM[QWEN_SYSTEM.index("</tools>\n") + 9:]},
        {"role": "user", "content": "Weather and time in Paris?"},
        {"role": "assistant", "content": "Checking both.",
         "tool_calls": _calls(("call_1", "get_weather", {"city": "Paris"}),
                              ("call_2", "get_time", {"tz": "Europe/Paris"}))},
        {"role": "tool", "tool_call_id": "call_2", "name": "get_time",
         "content": '{"name": "get_time", "content": "14:00"}'},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "sunny"},
        {"role": "assistant", "content": "Sunny, 14:00."}]
    assert "within <tools></tools> XML tags:\n\nFor each" in out["messages"][0]["content"]
    assert [t.get("name") or t["function"]["name"] for t in out["tools"]] == ["get_weather", "get_time"]
    _accepted(out)


def test_hermes_tools_already_in_the_row_are_kept_and_duplicates_noted():
    """A row with a 'tools' key keeps it; a <tools> tool of the same name is not added twice and is noted."""
    row = _qwen_row(tools=[{"name": "get_weather", "description": "other", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}])
    out = convert(row)
    assert [t.get("name") or t["function"]["name"] for t in out["tools"]] == ["get_weather", "get_time"]
    assert out["tools"][0]["description"] == "other"
    assert any("'get_weather'" in n and "different definition" in n for n in out["notes"])


def test_hermes_tool_response_in_a_user_turn_is_followed_by_the_user_text():
    """A user turn holding <tool_response> blocks gives tool messages, then the remaining text as a user message."""
    row = _qwen_row()
    row["messages"][3] = {"role": "user", "content": "<tool_response>\n14:00\n</tool_response>\n"
                                                     "<tool_response>\nsunny\n</tool_response>\nThanks!"}
    out = convert(row)
    assert out["messages"][3:6] == [
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "14:00"},
        {"role": "tool", "tool_call_id": "call_2", "name": "get_time", "content": "sunny"},
        {"role": "user", "content": "Thanks!"}]


@pytest.mark.parametrize("assistant,tool,expected", [
    ("<tool_call>\nget_weather(city='Paris')\n</tool_call>", None, "neither JSON nor a Python literal"),
    ("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}", None, "without its closing </tool_call>"),
    ("<tool_call>\n{\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", None, "has no string 'name'"),
    ("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{city: Paris\"}\n</tool_call>", None,
     "arguments string is not JSON"),
    ("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "<tool_response>a</tool_response><tool_response>b</tool_response>", "no unanswered tool call"),
    ("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "<tool_response>{\"name\": \"get_time\", \"content\": 1}</tool_response>", "names 'get_time'"),
    ("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "note: <tool_response>a</tool_response>", "text outside the <tool_response> tags"),
    ("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "<tool_response>a", "without its closing </tool_response>"),
])
def test_broken_hermes_rows_raise_with_a_clear_detail(assistant, tool, expected):
    """Broken tags, unparseable calls, nameless calls and unpaired results raise RecordError naming the turn."""
    conv = [{"from": "human", "value": "Paris?"}, {"from": "gpt", "value": assistant}]
    if tool is not None:
        conv.append({"from": "tool", "value": tool})
    with pytest.raises(RecordError) as exc:
        convert({"conversations": conv})
    assert expected in exc.value.detail
    assert "conversations[" in exc.value.detail


def test_broken_tools_block_raises():
    """A <tools> block that starts like JSON but is neither JSON nor Python literals raises, saying what to write."""
    row = {"conversations": [{"from": "system", "value": "<tools>\n[{'name': 'get_weather',}}]\n</tools>"},
                             {"from": "human", "value": "hi"}]}
    with pytest.raises(RecordError) as exc:
        convert(row)
    assert exc.value.reason == "bad tools" and "conversations[0]" in exc.value.detail


def test_tag_mentions_outside_their_turns_are_not_hermes():
    """Tags quoted in a user turn, or <tools></tools> named in prose, leave the row to other converters."""
    assert convert({"conversations": [{"from": "human", "value": "What does <tool_call>x</tool_call> mean?"},
                                      {"from": "gpt", "value": "It marks a call."}]}) is None
    for prose in ("Tools go in <tools></tools> tags.", "Tools go in <tools>...</tools> tags."):
        assert convert({"conversations": [{"from": "system", "value": prose},
                                          {"from": "human", "value": "ok"}]}) is None


# --------------------------------------------------------------------------- Glaive v2


def test_glaive_row_converts_exactly():
    """The real Glaive row: functions in the system text -> tools; single-quoted arguments -> an object."""
    out = convert(GLAIVE[0])
    assert out == {
        "messages": [
            {"role": "system", "content": "You are a helpful assistant with access to the following functions. "
                                          "Use them if required -"},
            {"role": "user", "content": "I have a text here and I am not sure what language it is. Can you help me "
                                        "identify it?"},
            {"role": "assistant", "content": "Of course, I can help with that. Please provide me with the text."},
            {"role": "user", "content": "Here it is - \"Je suis un étudiant\""},
            {"role": "assistant", "content": "",
             "tool_calls": _calls(("call_1", "detect_language", {"text": "Je suis un étudiant"}))},
            {"role": "tool", "tool_call_id": "call_1", "name": "detect_language", "content": '{"language": "French"}'},
            {"role": "assistant", "content": "The text you provided is in French."}],
        "tools": [{"name": "detect_language", "description": "Detect the language of a given text",
                   "parameters": {"type": "object", "properties": {"text": {
                       "type": "string", "description": "The text to detect the language of"}}, "required": ["text"]}}],
        "notes": ["converted from the Glaive function-calling v2 layout (system/chat): 1 tool, 1 call, 1 result"]}
    _accepted(out)


def test_glaive_row_without_functions():
    """The real Glaive row with no functions gives plain messages and an empty tool list."""
    out = convert(GLAIVE[1])
    assert out["messages"] == [
        {"role": "system", "content": "You are a helpful assistant, with no access to external functions."},
        {"role": "user", "content": "Assign this occupation to the appropriate category\nNurse"},
        {"role": "assistant", "content": "Healthcare"},
        {"role": "user", "content": "What about an electrician?"},
        {"role": "assistant", "content": "Skilled Trades"}]
    assert out["tools"] == []
    _accepted(out)


def _glaive(call: str, response: str = "FUNCTION RESPONSE: {\"ok\": true}\n\n\n") -> dict:
    return {"system": GLAIVE[0]["system"],
            "chat": f"USER: Which language is \"I'm here\"?\n\n\nASSISTANT: {call} <|endoftext|>\n\n\n{response}"
                    "ASSISTANT: English. <|endoftext|>\n\n\n"}


def test_glaive_quoted_arguments_with_an_apostrophe():
    """Single-quoted arguments JSON that itself holds an apostrophe is still read exactly."""
    out = convert(_glaive("<functioncall> {\"name\": \"detect_language\", \"arguments\": '{\"text\": \"I'm here\"}'}"))
    assert out["messages"][2]["tool_calls"] == _calls(("call_1", "detect_language", {"text": "I'm here"}))
    _accepted(out)


@pytest.mark.parametrize("call,response,expected", [
    ("<functioncall> {\"arguments\": '{\"text\": \"x\"}'}", "", "has no string 'name'"),
    ("<functioncall> {\"name\": \"detect_language\", \"arguments\": '{text: x}'}", "", "arguments string is not JSON"),
    ("<functioncall> detect_language(text='x')", "", "not JSON or a Python literal"),
    ("Let me see.", "FUNCTION RESPONSE: {}\n\n\n", "no unanswered tool call"),
])
def test_broken_glaive_rows_raise_with_a_clear_detail(call, response, expected):
    """A nameless or unparseable <functioncall>, or a response with no call, raises RecordError naming the turn."""
    with pytest.raises(RecordError) as exc:
        convert(_glaive(call, response))
    assert expected in exc.value.detail and "chat turn" in exc.value.detail


# --------------------------------------------------------------------------- ToolACE

TOOLACE_PROSE = ("You are an expert in composing functions. You are given a question and a set of possible functions. "
                 "\nBased on the question, you will need to make one or more function/tool calls to achieve the "
                 "purpose. \nIf none of the function can be used, point it out. If the given question lacks the "
                 "parameters required by the function,\nalso point it out. You should only return the function call "
                 "in tools call sections.\nHere is a list of functions in JSON format that you can invoke:\n")
TOOLACE_SUFFIX = (". \nShould you decide to return the function call(s). \nPut it in the format of [func1(params_name="
                  "params_value, params_name2=params_value2...), func2(params)]\n\nNO other text MUST be included. \n")


def _toolace_row(tools, *turns, **extra):
    """A ToolACE row: the dataset's own system text around ``tools``, then (from, value) turns."""
    return {"system": TOOLACE_PROSE + json.dumps(tools) + TOOLACE_SUFFIX,
            "conversations": [{"from": f, "value": v} for f, v in turns], **extra}


def _tool(name, **props):
    return {"name": name, "description": name, "parameters": {"type": "dict", "properties": {
        k: {"type": t, "description": k} for k, t in props.items()}, "required": []}, "required": None}


def test_toolace_row_converts_exactly():
    """The real ToolACE row: tools from the JSON list in the system text, [Name(args)] turns -> tool_calls,
    [{"name", "results"}] turns -> tool messages (content: the results as JSON text), prose turns as they are."""
    raw = TOOLACE[0]
    out = convert(raw)
    conv = raw["conversations"]
    assert out["messages"][0] == {"role": "system", "content": TOOLACE_PROSE + TOOLACE_SUFFIX[3:]}
    assert out["messages"][0]["content"].endswith("that you can invoke:\nShould you decide to return the function "
                                                  "call(s). \nPut it in the format of [func1(params_name=params_value, "
                                                  "params_name2=params_value2...), func2(params)]\n\nNO other text "
                                                  "MUST be included. \n")
    assert out["messages"][1:] == [
        {"role": "user", "content": conv[0]["value"]},
        {"role": "assistant", "content": "", "tool_calls": _calls(("call_1", "GetCompetitions", {}))},
        {"role": "tool", "tool_call_id": "call_1", "name": "GetCompetitions", "content": json.dumps(
            json.loads(conv[2]["value"])[0]["results"])},
        {"role": "assistant", "content": conv[3]["value"]},
        {"role": "user", "content": conv[4]["value"]},
        {"role": "assistant", "content": conv[5]["value"]},
        {"role": "user", "content": conv[6]["value"]},
        {"role": "assistant", "content": "", "tool_calls": _calls(
            ("call_2", "Get Manager Placeholder Image", {"sport": "football"}))},
        {"role": "tool", "tool_call_id": "call_2", "name": "Get Manager Placeholder Image", "content": json.dumps(
            json.loads(conv[8]["value"])[0]["results"])},
        {"role": "assistant", "content": conv[9]["value"]}]
    assert out["messages"][3]["content"].startswith('{"competitions": [{"id": 1, "name": "Copa Libertadores"')
    system = raw["system"]
    assert out["tools"] == json.loads(system[system.index("[{"):system.index("]. \nShould") + 1])
    assert [t["name"] for t in out["tools"]] == ["GetCompetitions", "Get Manager Placeholder Image",
                                                "Search Competition API", "Get Category Image"]
    assert set(out) == {"messages", "tools", "notes"}
    assert out["notes"] == ["converted from the ToolACE layout (system with a JSON tool list, [Name(args)] calls): "
                            "4 tools, 2 calls, 2 results"]
    record = _accepted(out)
    assert record["tools"][1]["parameters"]["type"] == "object"  # ToolACE's "dict" read as object


def test_toolace_minimal_row_without_results():
    """The minimal ToolACE-shaped row (a tool with spaces in its name, one call, no tool turn) converts."""
    out = convert(TOOLACE[1])
    assert out["messages"] == [
        {"role": "system", "content": "You are an expert in composing functions.\n"
                                     "Here is a list of functions in JSON format that you can invoke:\n"},
        {"role": "user", "content": "Show me US market trends."},
        {"role": "assistant", "content": "", "tool_calls": _calls(("call_1", "Market Trends API", {"country": "us"}))}]
    assert [t["name"] for t in out["tools"]] == ["Market Trends API"]
    _accepted(out)


def test_toolace_parallel_calls_literals_and_result_pairing():
    """Names with spaces, slashes and dots; JSON and Python literals; results paired by name, else in order."""
    tools = [_tool("Market Trends API", trend_type="string", country="string"),
             _tool("/madlibs-diceware", nphrase="integer"),
             _tool("geo.lookup v2", q="string", opts="dict", tags="array", exact="boolean", limit="number",
                   note="string", extra="null")]
    calls = ('[Market Trends API(trend_type="MARKET_INDEXES", country="us"), /madlibs-diceware(nphrase=2), '
             "geo.lookup v2(q=\"Paris, (FR)\", opts={'a': [1, {'b': None}]}, tags=[\"x\", 'y'], exact=True, "
             "limit=-1.5e2, note='it\\'s', extra=null,)]")
    results = ('[{"name": "/madlibs-diceware", "results": {"password": "calmly blue otter"}}, '
               '{"name": "Market Trends API", "results": {"trends": [{"name": "S&P 500"}]}, "error": null}, '
               '{"name": "geo lookup", "results": "ok"}]')
    out = convert(_toolace_row(tools, ("user", "Trends, a password and Paris?"), ("assistant", calls),
                               ("tool", results), ("assistant", "Done."), ("user", "And again?"),
                               ("assistant", "[/madlibs-diceware(nphrase=1)]"), ("tool", "temporarily unavailable")))
    assert out["messages"][2]["tool_calls"] == _calls(
        ("call_1", "Market Trends API", {"trend_type": "MARKET_INDEXES", "country": "us"}),
        ("call_2", "/madlibs-diceware", {"nphrase": 2}),
        ("call_3", "geo.lookup v2", {"q": "Paris, (FR)", "opts": {"a": [1, {"b": None}]}, "tags": ["x", "y"],
                                     "exact": True, "limit": -150.0, "note": "it's", "extra": None}))
    assert out["messages"][3:6] == [
        {"role": "tool", "tool_call_id": "call_2", "name": "/madlibs-diceware",
         "content": '{"password": "calmly blue otter"}'},
        {"role": "tool", "tool_call_id": "call_1", "name": "Market Trends API",
         "content": '{"results": {"trends": [{"name": "S&P 500"}]}, "error": null}'},
        {"role": "tool", "tool_call_id": "call_3", "name": "geo.lookup v2",
         "content": '{"name": "geo lookup", "results": "ok"}'}]
    assert out["messages"][6:] == [
        {"role": "assistant", "content": "Done."}, {"role": "user", "content": "And again?"},
        {"role": "assistant", "content": "", "tool_calls": _calls(("call_4", "/madlibs-diceware", {"nphrase": 1}))},
        {"role": "tool", "tool_call_id": "call_4", "name": "/madlibs-diceware", "content": "temporarily unavailable"}]
    assert any("names 'geo lookup', which no open call has; paired in order with call_3" in n for n in out["notes"])
    assert "4 calls, 4 results" in out["notes"][0]
    _accepted(out)


def test_toolace_name_holding_a_parenthesis_is_read_from_the_tool_list():
    """A defined tool name that holds '(' is matched whole; other names are read up to their '('."""
    tools = [_tool("Get Data (v2)", key="string"), _tool("Trending Videos")]
    out = convert(_toolace_row(tools, ("user", "x"), ("assistant", '[Get Data (v2)(key="a"), Trending Videos()]')))
    assert out["messages"][2]["tool_calls"] == _calls(("call_1", "Get Data (v2)", {"key": "a"}),
                                                      ("call_2", "Trending Videos", {}))


def test_toolace_rows_without_calls_and_system_turns():
    """A row that only answers (the format instruction marks it) keeps its tools; a system turn and the
    ShareGPT speakers human/gpt are read too; a system text holding only the list is dropped with a note."""
    tools = [_tool("Get Suggestion", term="string", country="string", lang="string")]
    asks = convert(_toolace_row(tools, ("user", "Games popular in Japan?"), ("assistant", "Which language?")))
    assert [m["role"] for m in asks["messages"]] == ["system", "user", "assistant"]
    assert asks["messages"][2] == {"role": "assistant", "content": "Which language?"}
    assert asks["tools"] == tools and "0 calls, 0 results" in asks["notes"][0]
    row = {"conversations": [
        {"from": "system", "value": json.dumps(tools)},
        {"from": "human", "value": "Games popular in Japan?", "weight": 0},
        {"from": "gpt", "value": '[Get Suggestion(term="popular", country="Japan", lang="en")]', "weight": 1}],
        "id": "t1"}
    out = convert(row)
    assert out["messages"] == [
        {"role": "user", "content": "Games popular in Japan?", "weight": 0},
        {"role": "assistant", "content": "", "weight": 1, "tool_calls": _calls(
            ("call_1", "Get Suggestion", {"term": "popular", "country": "Japan", "lang": "en"}))}]
    assert out["tools"] == tools and out["id"] == "t1"
    assert "conversations[0]: the system turn held only the tool list; dropped" in out["notes"]


@pytest.mark.parametrize("call,expected", [
    ('[Get Suggestion("popular")]', "argument 1 of 'Get Suggestion' has no name"),
    ('[Get Suggestion(term="popular)]', "a string is not closed"),
    ('[Get Suggestion(term=2024-01-15)]', "the value of 'term' is not a JSON or Python literal"),
    ('[Get Suggestion(term=popular)]', "the value of 'term' is not a JSON or Python literal"),
    ('[Get Suggestion(term="a", term="b")]', "'term' is given twice"),
    ('[Get Suggestion(term="a"]', "an unmatched ']' (is a ')' missing?)"),
    ('[Get Suggestion(term="a") Get Suggestion()]', "expected ',' or ']' after a call"),
    ('[Get Suggestion(term=)]', "term= has no value"),
    ('[Get Suggestion(term={"a": 1)]', "')' where '}' was expected"),
])
def test_broken_toolace_calls_raise_with_a_clear_detail(call, expected):
    """A broken call list in a ToolACE row raises RecordError naming the turn, the fault and the form to write."""
    tools = [_tool("Get Suggestion", term="string")]
    with pytest.raises(RecordError) as exc:
        convert(_toolace_row(tools, ("user", "x"), ("assistant", call)))
    assert exc.value.reason == "bad tool call"
    assert "conversations[1] (assistant)" in exc.value.detail and expected in exc.value.detail
    assert "expected [Name(param=value, ...), ...]" in exc.value.detail


def test_toolace_unterminated_call_list_is_kept_as_text_with_a_note():
    tools = [_tool("Get Suggestion", term="string")]
    out = convert(_toolace_row(tools, ("user", "x"), ("assistant", '[Get Suggestion(term="a"')))
    assert out["messages"][2] == {"role": "assistant", "content": '[Get Suggestion(term="a"'}
    assert "conversations[1]: starts like a call list but does not end with ']'; kept as text" in out["notes"]


def test_toolace_result_without_an_open_call_raises():
    tools = [_tool("Trending Videos")]
    with pytest.raises(RecordError) as exc:
        convert(_toolace_row(tools, ("user", "x"), ("assistant", "[Trending Videos()]"),
                             ("tool", '[{"name": "Trending Videos", "results": {}}, {"name": "Trending Videos", '
                                      '"results": {}}]')))
    assert exc.value.reason == "unmatched tool result" and "conversations[2] (tool) result 2" in exc.value.detail


@pytest.mark.parametrize("row", [
    {"system": "Here is a list of functions in JSON format that you can invoke:\n" + json.dumps([_tool("f")]),
     "conversations": [{"from": "user", "value": "hi"}, {"from": "assistant", "value": "Hello!"}]},
    {"system": "You can call tools.", "conversations": [{"from": "user", "value": "x"},
                                                         {"from": "assistant", "value": "[f(a=1)]"}]},
    {"system": json.dumps([_tool("f")]), "conversations": [{"from": "user", "value": "x"},
                                                            {"from": "function_call", "value": "[f(a=1)]"}]},
    {"system": json.dumps([_tool("f")]), "messages": [], "conversations": [{"from": "assistant", "value": "[f()]"}]},
    {"system": json.dumps([_tool("f")]), "prompt": {}, "conversations": [{"from": "assistant", "value": "[f()]"}]},
], ids=["no-calls-no-instruction", "no-tool-list", "function_call-turns", "messages-key", "hsa-record"])
def test_rows_that_are_not_toolace_give_none(row):
    """Strict recognition: a JSON tool list in the system text AND call lists (or the call-format instruction)."""
    assert convert(row) is None


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_row_converts_exactly():
    """The real Anthropic row: tool_use -> tool_calls with its id, tool_result -> tool message, text -> content."""
    out = convert(ANTHROPIC[0])
    assert out["messages"] == [
        {"role": "user", "content": "What is the weather in San Francisco?"},
        {"role": "assistant", "content": "",
         "tool_calls": _calls(("toolu_01", "get_weather", {"location": "San Francisco, CA"}))},
        {"role": "tool", "tool_call_id": "toolu_01", "name": "get_weather", "content": "15 degrees, sunny"},
        {"role": "assistant", "content": "It is 15 degrees and sunny in San Francisco."}]
    assert out["system"] == ANTHROPIC[0]["system"] and out["tools"] == ANTHROPIC[0]["tools"]
    assert convert_messages(ANTHROPIC[0]["messages"]) == (out["messages"], out["notes"])
    _accepted(out)


def test_anthropic_text_beside_tool_use_becomes_content():
    """The second real Anthropic row: text and tool_use in one message -> content plus tool_calls."""
    messages, notes = convert_messages(ANTHROPIC[1]["messages"])
    assert messages[1] == {"role": "assistant", "content": "Let me help you check the weather in Beijing.",
                           "tool_calls": _calls(("toolu_012f3meaYuYj9yPPuyuRVw9U", "get_weather",
                                                 {"location": "Beijing"}))}
    assert notes == ["converted Anthropic content blocks: 1 tool_use -> tool_calls, 0 tool_results -> tool messages"]
    _accepted({**ANTHROPIC[1], "messages": messages})


def test_anthropic_results_with_blocks_errors_thinking_and_user_text():
    """Block-list results are joined, is_error kept, thinking -> reasoning_content, user text follows the results."""
    messages = [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Two cities.", "signature": "sig"},
            {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"location": "Paris"}},
            {"type": "tool_use", "id": "t2", "name": "get_weather", "input": {"location": "Rome"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "hot"}]},
            {"type": "tool_result", "tool_use_id": "t1", "content": "timeout", "is_error": True},
            {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]}]
    new, notes = convert_messages(messages)
    assert new == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": "", "reasoning_content": "Two cities.",
         "tool_calls": _calls(("t1", "get_weather", {"location": "Paris"}),
                              ("t2", "get_weather", {"location": "Rome"}))},
        {"role": "tool", "tool_call_id": "t2", "name": "get_weather", "content": "hot"},
        {"role": "tool", "tool_call_id": "t1", "name": "get_weather", "content": "timeout", "is_error": True},
        {"role": "user", "content": "Be brief."}]
    assert notes[-1] == "dropped: text block key 'cache_control' (x1), thinking signature (x1)"


def test_anthropic_result_for_an_unknown_call_raises():
    """A tool_result whose tool_use_id no earlier tool_use has raises RecordError naming the block."""
    messages = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "x"}]}]
    with pytest.raises(RecordError) as exc:
        convert_messages(messages)
    assert "messages[0].content[0]" in exc.value.detail and "'nope'" in exc.value.detail


def test_convert_messages_leaves_openai_messages_alone():
    """Messages already in the OpenAI format (and text-only block lists) give None."""
    assert convert_messages(OTHER[0]["messages"]) is None
    assert convert_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]) is None


# --------------------------------------------------------------------------- Gemini


def test_gemini_row_converts_exactly():
    """The real Gemini row: model -> assistant with call_1, functionResponse -> tool message, declarations unwrapped."""
    out = convert(GEMINI[0])
    assert out["messages"] == [
        {"role": "user", "content": "Turn the lights down to a romantic level"},
        {"role": "assistant", "content": "",
         "tool_calls": _calls(("call_1", "set_light_values", {"brightness": 25, "color_temp": "warm"}))},
        {"role": "tool", "tool_call_id": "call_1", "name": "set_light_values",
         "content": '{"brightness": 25, "colorTemperature": "warm"}'}]
    assert out["tools"] == GEMINI[0]["tools"][0]["functionDeclarations"]
    assert "contents" not in out
    _accepted(out)


def test_gemini_system_instruction_parallel_calls_and_dropped_parts():
    """systemInstruction -> system; parallel responses paired by name; non-function tools and signatures noted."""
    decl = GEMINI[0]["tools"][0]["functionDeclarations"][0]
    row = {"systemInstruction": {"parts": [{"text": "You control lights."}]},
           "tools": [{"function_declarations": [decl]}, {"googleSearch": {}}],
           "generationConfig": {"temperature": 0},
           "contents": [
               {"role": "user", "parts": [{"text": "Dim both rooms."}]},
               {"role": "model", "parts": [
                   {"text": "Dimming.", "thoughtSignature": "abc"},
                   {"functionCall": {"name": "set_light_values", "args": {"brightness": 10, "color_temp": "warm"}}},
                   {"functionCall": {"name": "other", "args": {}}}]},
               {"role": "function", "parts": [
                   {"functionResponse": {"name": "other", "response": {"ok": True}}},
                   {"functionResponse": {"name": "set_light_values", "response": {"brightness": 10}}}]},
               {"role": "model", "parts": [{"text": "Done."}]}]}
    out = convert(row)
    assert out["messages"] == [
        {"role": "system", "content": "You control lights."},
        {"role": "user", "content": "Dim both rooms."},
        {"role": "assistant", "content": "Dimming.", "tool_calls": _calls(
            ("call_1", "set_light_values", {"brightness": 10, "color_temp": "warm"}), ("call_2", "other", {}))},
        {"role": "tool", "tool_call_id": "call_2", "name": "other", "content": '{"ok": true}'},
        {"role": "tool", "tool_call_id": "call_1", "name": "set_light_values", "content": '{"brightness": 10}'},
        {"role": "assistant", "content": "Done."}]
    assert out["tools"] == [decl] and out["generationConfig"] == {"temperature": 0}
    assert "systemInstruction" not in out
    assert any("['googleSearch'] dropped" in n for n in out["notes"])
    assert "dropped: thoughtSignature (x1)" in out["notes"]


@pytest.mark.parametrize("part,expected", [
    ({"inlineData": {"mimeType": "image/png", "data": "AA=="}}, "holds ['inlineData']"),
    ({"functionCall": {"args": {}}}, "functionCall has no string 'name'"),
    ({"functionCall": {"name": "f", "args": [1]}}, "arguments must be an object"),
])
def test_broken_gemini_rows_raise_with_a_clear_detail(part, expected):
    """Unsupported parts and nameless or non-object calls raise RecordError naming the part."""
    row = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [part]}]}
    with pytest.raises(RecordError) as exc:
        convert(row)
    assert expected in exc.value.detail and "contents[1].parts[0]" in exc.value.detail


# --------------------------------------------------------------------------- other layouts, purity


@pytest.mark.parametrize("row", OTHER, ids=OTHER_NAMES)
def test_other_layouts_give_none(row):
    """Plain HF/OpenAI messages, xLAM, tag-free ShareGPT and BFCL rows are not converted here."""
    assert convert(row) is None


def test_conversion_does_not_modify_its_input():
    """convert is pure: every real row is left exactly as it came."""
    for row in HERMES[:1] + GLAIVE + TOOLACE + ANTHROPIC + GEMINI:
        before = copy.deepcopy(row)
        convert(row)
        assert row == before


# --------------------------------------------------------------------------- OpenAI legacy function calling


def test_openai_legacy_function_calling_row():
    """functions -> tools, function_call -> a tool call with an id, the function message -> its tool result."""
    row = json.loads(LEGACY_LINES[0])
    out = convert(row)
    assert "functions" not in out and out["tools"] == row["functions"]
    assert out["messages"][2] == {"role": "assistant", "content": None,
                                  "tool_calls": _calls(("call_legacy_1", "get_weather", '{"city": "Tokyo"}'))}
    assert out["messages"][3] == {"role": "tool", "tool_call_id": "call_legacy_1", "name": "get_weather",
                                  "content": "sunny"}
    assert out["notes"][0].startswith("converted OpenAI legacy function calling: 1 function_call")
    record = _accepted(row)
    assert record["messages"][2]["tool_calls"][0]["function"]["arguments"] == {"city": "Tokyo"}


def test_openai_legacy_results_pair_with_their_calls_by_name():
    """Two calls, then their results in the other order: each result answers the call of its name."""
    row = {"functions": json.dumps([{"name": n, "parameters": {"type": "object", "properties": {}}}
                                    for n in ("a", "b")]),
           "messages": [{"role": "user", "content": "go"},
                        {"role": "assistant", "content": "", "function_call": {"name": "a", "arguments": "{}"}},
                        {"role": "assistant", "content": "", "function_call": {"name": "b", "arguments": "{}"}},
                        {"role": "function", "name": "b", "content": "B"},
                        {"role": "function", "name": "a", "content": "A"}]}
    record = _accepted(row)
    ids = {m["tool_calls"][0]["function"]["name"]: m["tool_calls"][0]["id"] for m in record["messages"][1:3]}
    assert [(m["name"], m["tool_call_id"], m["content"]) for m in record["messages"][3:]] == [
        ("b", ids["b"], "B"), ("a", ids["a"], "A")]
    assert "'functions' was a JSON string; parsed" in record["notes"]


@pytest.mark.parametrize("messages, reason, where", [
    ([{"role": "user", "content": "x"}, {"role": "function", "name": "f", "content": "r"}],
     "unanswered function result", r"messages\[1\] is a 'function' result for 'f'"),
    ([{"role": "user", "content": "x", "function_call": {"name": "f"}}], "bad function_call", r"messages\[0\]"),
    ([{"role": "assistant", "content": "", "function_call": {"arguments": "{}"}}], "bad function_call",
     r"messages\[0\]\.function_call should be"),
])
def test_openai_legacy_broken_rows_are_clear_rejects(messages, reason, where):
    """A result with no call, a call on a user turn and a nameless call each say where and what is expected."""
    with pytest.raises(RecordError, match=where) as e:
        normalize({"messages": messages, "functions": [{"name": "f", "parameters": {"type": "object"}}]})
    assert e.value.reason == reason


# --------------------------------------------------------------------------- Glaive in ShareGPT conversations

#: a glaive-function-calling-v2 row as republished in ShareGPT form (e.g. lilacai/glaive-function-calling-v2-sharegpt)
GLAIVE_SHAREGPT = {"conversations": [
    {"from": "system", "value": "SYSTEM: You are a helpful assistant with access to the following functions. Use them "
                                "if required -\n{\n    \"name\": \"get_exchange_rate\",\n    \"description\": \"Get the "
                                "exchange rate between two currencies\",\n    \"parameters\": {\n        \"type\": "
                                "\"object\",\n        \"properties\": {\n            \"base_currency\": {\n"
                                "                \"type\": \"string\",\n                \"description\": \"The currency "
                                "to convert from\"\n            },\n            \"target_currency\": {\n"
                                "                \"type\": \"string\",\n                \"description\": \"The currency "
                                "to convert to\"\n            }\n        },\n        \"required\": [\n"
                                "            \"base_currency\",\n            \"target_currency\"\n        ]\n    }\n}\n"},
    {"from": "human", "value": "Can you book a flight for me from New York to London?"},
    {"from": "gpt", "value": "I'm sorry, but I don't have the capability to book flights."},
    {"from": "human", "value": "What is the exchange rate from USD to GBP?"},
    {"from": "gpt", "value": "<functioncall> {\"name\": \"get_exchange_rate\", \"arguments\": '{\"base_currency\": "
                             "\"USD\", \"target_currency\": \"GBP\"}'} <|endoftext|>"},
    {"from": "tool", "value": "{\"exchange_rate\": 0.75}"},
    {"from": "gpt", "value": "The exchange rate from USD to GBP is 0.75."}]}


def test_glaive_rows_in_sharegpt_conversations():
    """The system turn's definitions become tools, <functioncall> a tool call, the tool turn its result."""
    out = convert(GLAIVE_SHAREGPT)
    assert [t["name"] for t in out["tools"]] == ["get_exchange_rate"]
    assert out["messages"][0] == {"role": "system", "content": "You are a helpful assistant with access to the "
                                                               "following functions. Use them if required -"}
    assert out["messages"][4] == {"role": "assistant", "content": "", "tool_calls": _calls(
        ("call_1", "get_exchange_rate", {"base_currency": "USD", "target_currency": "GBP"}))}
    assert out["messages"][5] == {"role": "tool", "tool_call_id": "call_1", "name": "get_exchange_rate",
                                  "content": "{\"exchange_rate\": 0.75}"}
    assert out["notes"][0].startswith("converted from Glaive function calling in ShareGPT conversations: 1 tool")
    _accepted(GLAIVE_SHAREGPT)


def test_glaive_sharegpt_result_without_a_call_is_a_clear_reject():
    """A tool turn that answers no <functioncall> names its turn."""
    row = copy.deepcopy(GLAIVE_SHAREGPT)
    del row["conversations"][4]
    with pytest.raises(RecordError, match=r"conversations\[4\] \(tool\)"):
        convert(row)


def test_glaive_turns_in_chat_messages():
    """The same Glaive turns as messages with text contents convert alike; a plain "SYSTEM:" prompt without
    function definitions or calls is left alone."""
    row = {"messages": [{"role": {"human": "user", "gpt": "assistant"}.get(t["from"], t["from"]), "content": t["value"]}
                        for t in GLAIVE_SHAREGPT["conversations"]]}
    out = convert(row)
    assert out["messages"] == convert(GLAIVE_SHAREGPT)["messages"]
    assert out["notes"][0].startswith("converted from Glaive function calling in chat messages: 1 tool, 1 call")
    plain = {"messages": [{"role": "system", "content": "SYSTEM: be brief"}, {"role": "user", "content": "hi"}]}
    assert convert(plain) is None


# --------------------------------------------------------------------------- calls left as model output text

WEATHER_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def test_llama_python_tag_calls_and_ipython_results():
    """Llama 3.1's <|python_tag|>{"name", "parameters"} text becomes a tool call; the ipython turn its result."""
    row = {"messages": [{"role": "user", "content": "weather in Paris?"},
                        {"role": "assistant", "content": '<|python_tag|>{"name": "get_weather", '
                                                         '"parameters": {"city": "Paris"}}<|eom_id|>'},
                        {"role": "ipython", "content": '{"temp": 20}'},
                        {"role": "assistant", "content": "20 degrees."}], "tools": WEATHER_TOOLS}
    out = convert(row)
    assert out["messages"][1] == {"role": "assistant", "content": "",
                                  "tool_calls": _calls(("call_1", "get_weather", {"city": "Paris"}))}
    assert out["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "name": "get_weather",
                                  "content": '{"temp": 20}'}
    assert out["notes"] == ["converted tool calls written as model output text (Llama <|python_tag|> x1): "
                            "1 call, 1 result"]
    _accepted(row)


def test_mistral_tool_calls_text_keeps_its_ids():
    """Mistral's [TOOL_CALLS] list becomes parallel calls with their ids; results pair by id, else in order."""
    row = {"messages": [{"role": "user", "content": "Paris and Rome?"},
                        {"role": "assistant", "content": '[TOOL_CALLS] [{"name": "get_weather", "arguments": '
                                                         '{"city": "Paris"}, "id": "a1b2c3d4e"}, {"name": '
                                                         '"get_weather", "arguments": {"city": "Rome"}, "id": '
                                                         '"f5g6h7i8j"}]'},
                        {"role": "tool", "tool_call_id": "f5g6h7i8j", "content": "25"},
                        {"role": "tool", "content": "20"},
                        {"role": "assistant", "content": "20 and 25."}], "tools": WEATHER_TOOLS}
    out = convert(row)
    assert [c["id"] for c in out["messages"][1]["tool_calls"]] == ["a1b2c3d4e", "f5g6h7i8j"]
    assert [(m["tool_call_id"], m["content"]) for m in out["messages"][2:4]] == [("f5g6h7i8j", "25"),
                                                                                 ("a1b2c3d4e", "20")]
    _accepted(row)


def test_json_replies_that_are_no_calls_stay_text():
    """A JSON reply that names no declared tool, and rows with structured calls, are not touched."""
    row = {"messages": [{"role": "user", "content": "json please"},
                        {"role": "assistant", "content": '{"name": "Bob", "parameters": {"age": 3}}'}],
           "tools": WEATHER_TOOLS}
    assert convert(row) is None
    assert convert(OTHER[0]) is None  # hf_transformers row: structured tool_calls already


# --------------------------------------------------------------------------- ReAct text (ToolBench)

TOOLBENCH_SYSTEM = (
    "You are AutoGPT, you can use many tools(functions) to do the following task.\nFirst I will give you the task "
    "description, and your task start.\nSpecifically, you have access to the following APIs: [{'name': "
    "'get_random_quote_for_quotes', 'description': 'This is the subfunction for tool \"quotes\", you can use this "
    "tool.', 'parameters': {'type': 'object', 'properties': {'category': {'type': 'string', 'description': 'the "
    "category', 'example_value': 'love'}}, 'required': ['category'], 'optional': []}}, {'name': 'Finish', "
    "'description': 'If you believe that you have obtained a result that can answer the task, please call this "
    "function to provide the final answer.', 'parameters': {'type': 'object', 'properties': {'return_type': {'type': "
    "'string', 'enum': ['give_answer', 'give_up_and_restart']}, 'final_answer': {'type': 'string', 'description': "
    "\"The final answer you want to give the user.\"}}, 'required': ['return_type']}}]")
TOOLBENCH = {"id": "Step 2: quote", "conversations": [
    {"from": "system", "value": TOOLBENCH_SYSTEM},
    {"from": "user", "value": "I need a love quote.\nBegin!\n"},
    {"from": "assistant", "value": "\nThought: I should call the quotes API.\nAction: get_random_quote_for_quotes\n"
                                   "Action Input: {\n  \"category\": \"love\"\n}"},
    {"from": "function", "value": "{\"error\": \"\", \"response\": \"Love is patient.\"}"},
    {"from": "assistant", "value": "\nThought: I have it.\nAction: Finish\nAction Input: {\n  \"return_type\": "
                                   "\"give_answer\",\n  \"final_answer\": \"Love is patient.\"\n}"}]}


def test_toolbench_react_rows():
    """The API list leaves the system text and becomes tools; Action / Action Input become calls after the
    thought; function turns become their results."""
    out = convert(TOOLBENCH)
    assert [t["name"] for t in out["tools"]] == ["get_random_quote_for_quotes", "Finish"]
    assert "Specifically" not in out["messages"][0]["content"] and out["messages"][0]["content"].startswith("You are")
    assert out["messages"][2] == {"role": "assistant", "content": "Thought: I should call the quotes API.",
                                  "tool_calls": _calls(("call_1", "get_random_quote_for_quotes",
                                                        {"category": "love"}))}
    assert out["messages"][3]["tool_call_id"] == "call_1" and out["messages"][3]["role"] == "tool"
    assert out["messages"][4]["tool_calls"][0]["function"] == {
        "name": "Finish", "arguments": {"return_type": "give_answer", "final_answer": "Love is patient."}}
    record = _accepted(TOOLBENCH)
    assert record["tools"][0]["parameters"]["required"] == ["category"]


def test_react_text_with_tools_given_beside_it():
    """ReAct turns in chat messages calling tools from the row's own list convert too; an Action naming no
    declared tool leaves the row alone."""
    tools = [{"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]
    row = {"tools": tools, "messages": [
        {"role": "user", "content": "find hsa"},
        {"role": "assistant", "content": "Thought: search it\nAction: search\nAction Input: {\"q\": \"hsa\"}"},
        {"role": "observation", "content": "found"}, {"role": "assistant", "content": "Found it."}]}
    out = convert(row)
    assert out["messages"][1]["tool_calls"][0]["function"] == {"name": "search", "arguments": {"q": "hsa"}}
    assert out["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "name": "search", "content": "found"}
    _accepted(row)
    row["messages"][1]["content"] = "Thought: x\nAction: browse\nAction Input: {}"
    assert convert(row) is None


def test_react_text_whose_action_input_is_not_an_object_is_left_alone():
    """An Action Input followed by more text (a whole ReAct transcript in one turn) is not guessed at."""
    row = copy.deepcopy(TOOLBENCH)
    row["conversations"][2]["value"] += "\nObservation: it worked"
    assert convert(row) is None


# --------------------------------------------------------------------------- OpenAI Responses API items

RESPONSES = {
    "instructions": "You are a weather bot.",
    "tools": [{"type": "function", "name": "get_weather", "description": "Weather for a city", "strict": True,
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                              "additionalProperties": False}}],
    "input": [{"role": "user", "content": "Weather in Tokyo and Paris?"},
              {"type": "reasoning", "id": "rs_1", "summary": []},
              {"id": "fc_1", "type": "function_call", "call_id": "call_a", "name": "get_weather",
               "arguments": "{\"city\":\"Tokyo\"}", "status": "completed"},
              {"id": "fc_2", "type": "function_call", "call_id": "call_b", "name": "get_weather",
               "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
              {"type": "function_call_output", "call_id": "call_b", "output": "rain"},
              {"type": "function_call_output", "call_id": "call_a", "output": "sunny"}],
    "output": [{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "Tokyo is sunny, Paris rainy.", "annotations": []}]}]}


def test_responses_api_items_of_an_agents_sdk_run():
    """instructions -> system, parallel function_call items -> one assistant turn, outputs paired by call_id,
    the response's output appended; reasoning items are dropped and noted."""
    out = convert(RESPONSES)
    assert [m["role"] for m in out["messages"]] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert out["messages"][2]["tool_calls"] == _calls(("call_a", "get_weather", {"city": "Tokyo"}),
                                                      ("call_b", "get_weather", {"city": "Paris"}))
    assert [(m["tool_call_id"], m["content"]) for m in out["messages"][3:5]] == [("call_b", "rain"),
                                                                                 ("call_a", "sunny")]
    assert out["messages"][5] == {"role": "assistant", "content": "Tokyo is sunny, Paris rainy."}
    assert "input" not in out and "output" not in out and "instructions" not in out
    assert out["notes"] == ["converted OpenAI Responses API items: 2 function_calls -> tool_calls, "
                            "2 function_call_outputs -> tool messages", "dropped: reasoning item (x1)"]
    _accepted(RESPONSES)


def test_responses_output_without_its_call_is_a_clear_reject():
    """A function_call_output whose call_id no earlier function_call has names the item."""
    row = copy.deepcopy(RESPONSES)
    del row["input"][2]
    with pytest.raises(RecordError, match=r"input\[4\]: function_call_output for call_id 'call_a'"):
        convert(row)


# --------------------------------------------------------------------------- LangChain message dicts

def _lc(kind: str, **data):
    return {"type": kind, "data": {"additional_kwargs": {}, "response_metadata": {}, "type": kind, **data}}


def test_langchain_messages_to_dict_rows():
    """messages_to_dict output (human / ai with tool_calls / tool / system) reads as chat messages."""
    row = {"tools": WEATHER_TOOLS, "messages": [
        _lc("system", content="You are helpful."), _lc("human", content="Weather in Oslo?"),
        _lc("ai", content="", tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"}, "id": "call_1",
                                            "type": "tool_call"}], invalid_tool_calls=[],
            usage_metadata={"input_tokens": 10}),
        _lc("tool", content="cold", name="get_weather", tool_call_id="call_1", status="success"),
        _lc("ai", content="It is cold.", tool_calls=[])]}
    out = convert(row)
    assert out["messages"] == [
        {"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "", "tool_calls": _calls(("call_1", "get_weather", {"city": "Oslo"}))},
        {"role": "tool", "content": "cold", "tool_call_id": "call_1", "name": "get_weather"},
        {"role": "assistant", "content": "It is cold."}]
    assert out["notes"] == ["converted LangChain message dicts: 1 tool call, 1 tool result",
                            "dropped: usage_metadata (x1)"]
    _accepted(row)


def test_langchain_dumpd_rows_with_anthropic_blocks():
    """dumpd output ({"lc": 1, "id": [..., "AIMessage"], "kwargs"}); tool_use blocks become the calls when
    tool_calls is empty and are not repeated in the text."""
    def lc(cls, **kwargs):
        return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", cls], "kwargs": kwargs}
    row = {"tools": WEATHER_TOOLS, "messages": [
        lc("HumanMessage", content="Weather in Oslo?"),
        lc("AIMessage", content=[{"type": "text", "text": "Checking."},
                                 {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]),
        lc("ToolMessage", content="cold", tool_call_id="toolu_1")]}
    out = convert(row)
    assert out["messages"][1] == {"role": "assistant", "content": "Checking.",
                                  "tool_calls": _calls(("toolu_1", "get_weather", {"city": "Oslo"}))}
    assert out["messages"][2] == {"role": "tool", "content": "cold", "tool_call_id": "toolu_1", "name": "get_weather"}
    _accepted(row)


# --------------------------------------------------------------------------- Vercel AI SDK parts, Ollama names

def test_vercel_ai_sdk_tool_parts():
    """tool-call parts become tool calls beside the text; tool-result parts (AI SDK 4 result, 5 output) become
    tool messages."""
    row = {"tools": WEATHER_TOOLS, "messages": [
        {"role": "user", "content": "Oslo and Rome?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather", "args": {"city": "Oslo"}},
            {"type": "tool-call", "toolCallId": "c2", "toolName": "get_weather", "input": {"city": "Rome"}}]},
        {"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "c1", "toolName": "get_weather", "result": {"temp": -3}},
            {"type": "tool-result", "toolCallId": "c2", "toolName": "get_weather",
             "output": {"type": "json", "value": {"temp": 25}}}]},
        {"role": "assistant", "content": "Cold and warm."}]}
    out = convert(row)
    assert out["messages"][1] == {"role": "assistant", "content": "Let me check.", "tool_calls": _calls(
        ("c1", "get_weather", {"city": "Oslo"}), ("c2", "get_weather", {"city": "Rome"}))}
    assert out["messages"][2:4] == [
        {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": '{"temp": -3}'},
        {"role": "tool", "tool_call_id": "c2", "name": "get_weather", "content": '{"temp": 25}'}]
    _accepted(row)


def test_ollama_tool_name_is_read_as_name():
    """Ollama's tool_name on a tool message becomes name, so a tool rename reaches it."""
    row = {"tools": WEATHER_TOOLS, "messages": [
        {"role": "user", "content": "Oslo?"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather",
                                                                          "arguments": {"city": "Oslo"}}}]},
        {"role": "tool", "content": "cold", "tool_name": "get_weather"}]}
    out = convert(row)
    assert out["messages"][2] == {"role": "tool", "content": "cold", "name": "get_weather"}
    _accepted(row)
